package relay

import (
	"os/exec"
	"strings"
	"testing"
)

// TestA2AGoStaysInTests: the official A2A Go SDK, which TestA2AGoClient
// drives, is a dependency of this package's tests only; no package of the
// module, and so no binary, imports it.
func TestA2AGoStaysInTests(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/a2aproject/") {
			t.Errorf("%s is a dependency of the module's packages; only test/relay's tests may import a2a-go", p)
		}
	}
}
