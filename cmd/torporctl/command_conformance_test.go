package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestConformanceAtomVectors runs the command on the repository's copy of
// the reference vectors: nothing may fail.
func TestConformanceAtomVectors(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"conformance", "../../testdata/vectors/atom"}, &out, &errb)
	if code != 0 {
		t.Fatalf("torporctl conformance exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
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
