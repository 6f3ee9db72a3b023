package testenv

import (
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
