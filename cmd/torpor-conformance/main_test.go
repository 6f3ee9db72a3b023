package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the testscript scripts in testdata/script run
// torpor-conformance as a command in the same binary.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"torpor-conformance": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}

// TestAtomVectors runs the command on the repository's copy of the
// reference vectors: nothing may fail.
func TestAtomVectors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"../../testdata/vectors/atom"}, &out, &errb); code != 0 {
		t.Fatalf("torpor-conformance exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasSuffix(last, " skipped") || !strings.Contains(last, " 0 failed,") {
		t.Errorf("summary line = %q", last)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "PASS ") && !strings.HasPrefix(l, "SKIP ") {
			t.Errorf("unexpected line %q", l)
		}
	}
}

// TestEnvelopeVectors runs the command on the scope-algebra vectors.
func TestEnvelopeVectors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"../../testdata/vectors/envelope"}, &out, &errb); code != 0 {
		t.Fatalf("torpor-conformance exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "PASS lap-scope-v0-attenuation") || !strings.Contains(out.String(), " 0 failed,") {
		t.Errorf("output:\n%s", out.String())
	}
}
