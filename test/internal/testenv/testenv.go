// Package testenv decides what a test does when something it needs from the
// machine is missing: a tool on PATH, root, an installed package.
//
// By default such a test skips, so `go test ./...` stays green on a laptop
// that lacks QEMU or Node. When TORPOR_REQUIRE_TOOLS=1 or CI=true (what
// `make check` and CI set) a missing prerequisite is a test failure instead,
// because a suite that silently skips its interop or crash tests proves
// nothing.
//
// It also holds what the integration tests need from the machine around a
// binary: building and running it (Binary, BuildAt, Start), a key file to
// hand it (KeyFile), the SHA-256 an owner's update directory signs for a
// target (SignedSHA256), a free loopback port (FreePort, FreeAddr) and the
// directory a test leaves its artifacts in (Artifacts).
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Required reports whether missing prerequisites fail tests rather than skip
// them: TORPOR_REQUIRE_TOOLS=1 or CI=true.
func Required() bool {
	return os.Getenv("TORPOR_REQUIRE_TOOLS") == "1" || os.Getenv("CI") == "true"
}

// Unavailable ends the test because a prerequisite is missing: t.Fatal when
// Required, else t.Skip. reason says what is missing and how to get it.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if Required() {
		t.Fatalf("required prerequisite missing: %s", reason)
		return
	}
	t.Skipf("skipping: %s (set TORPOR_REQUIRE_TOOLS=1 to make this a failure)", reason)
}

// RequireTool returns the path of the named executable found on PATH, or ends
// the test through Unavailable.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, name+" not found on PATH (make check-setup installs it)")
	}
	return p
}

// RequireRoot ends the test through Unavailable unless it runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "test needs root")
	}
}
