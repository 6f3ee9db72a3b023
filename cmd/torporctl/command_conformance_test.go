package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestConformanceMoved checks that the retired command fails and names its
// replacement, with or without arguments.
func TestConformanceMoved(t *testing.T) {
	for _, args := range [][]string{{"conformance"}, {"conformance", "--store", "jetstream", "testdata/vectors/atom"}} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "run torpor-conformance ") || out.Len() != 0 {
			t.Errorf("torporctl %q = %d, stdout %q, stderr %q; want 1 and a pointer to torpor-conformance", args, code, out.String(), errb.String())
		}
	}
}
