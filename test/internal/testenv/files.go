package testenv

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/did"
)

// KeyFile writes k as a key file (torporctl keygen's format) in a new
// temporary directory of t's and returns its path.
func KeyFile(t testing.TB, k *did.PrivateKey) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "id.key")
	if err := did.SaveKey(path, k, false); err != nil {
		t.Fatal(err)
	}
	return path
}

// Artifacts returns the directory where a test leaves what a person reads
// after the run (screenshots, a history's visualization), creating it:
// $TORPOR_ARTIFACTS, or fallback in the system's temporary directory.
func Artifacts(t testing.TB, fallback string) string {
	t.Helper()
	dir := os.Getenv("TORPOR_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fallback)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// FreePort returns a TCP port of the loopback interface that was free a
// moment ago: another process may take it before the caller listens.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreeAddr returns FreePort's port as a loopback address, host:port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// SignedSHA256 returns the SHA-256 (hex) that the targets metadata of the
// owner's update directory dir (torporctl update sign-target's) signs for
// target, and fails t if the metadata cannot be read or names no SHA-256
// for target.
func SignedSHA256(t testing.TB, dir, target string) string {
	t.Helper()
	var targets struct {
		Signed struct {
			Targets map[string]struct {
				Hashes map[string]string `json:"hashes"`
			} `json:"targets"`
		} `json:"signed"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "targets.json"))
	if err == nil {
		err = json.Unmarshal(b, &targets)
	}
	sum := targets.Signed.Targets[target].Hashes["sha256"]
	if err != nil || sum == "" {
		t.Fatalf("the signed targets in %s: %v, no SHA-256 of %s", dir, err, target)
	}
	return sum
}
