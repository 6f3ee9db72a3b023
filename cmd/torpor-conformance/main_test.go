package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

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

func TestJSONReport(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--json", "../../testdata/vectors/atom"}, &out, &errb); code != 0 {
		t.Fatalf("torpor-conformance --json exited %d: %s", code, errb.String())
	}
	var rep struct{ Failed int }
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("--json output is not one JSON document: %v\n%s", err, out.String())
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    int
		wantErr string
	}{
		{"no directory", nil, 2, "want one argument"},
		{"two directories", []string{"a", "b"}, 2, "want one argument"},
		{"unknown flag", []string{"--nope", "dir"}, 2, "flag provided but not defined"},
		{"help", []string{"-h"}, 0, "usage: torpor-conformance"},
		{"no vectors", []string{t.TempDir()}, 1, "torpor-conformance: "},
		{"unknown store", []string{"--store", "mongo", "../../testdata/vectors/atom"}, 1, "mongo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			got := run(tt.args, &out, &errb)
			if got != tt.want || !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("run(%q) = %d, stderr %q; want %d and one containing %q", tt.args, got, errb.String(), tt.want, tt.wantErr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "torpor-conformance ") {
		t.Errorf("--version = %d, %q", code, out.String())
	}
}
