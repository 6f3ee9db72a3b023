package console

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadSecret: the session key is made once, mode 0600, and read back;
// a short file is refused.
func TestLoadSecret(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadSecret(dir)
	if err != nil || len(a) != 32 {
		t.Fatalf("LoadSecret = %d bytes, %v", len(a), err)
	}
	fi, err := os.Stat(filepath.Join(dir, SecretFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v, %v; want 0600", fi.Mode(), err)
	}
	b, err := LoadSecret(dir)
	if err != nil || !bytes.Equal(a, b) {
		t.Errorf("second LoadSecret = %x, %v; want the same key", b, err)
	}
	os.WriteFile(filepath.Join(dir, SecretFile), []byte("short"), 0o600)
	if _, err := LoadSecret(dir); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("short secret: %v", err)
	}
}
