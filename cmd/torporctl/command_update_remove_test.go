package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/updaterepo"
)

// TestUpdateDropTarget: drop-target signs the next targets version
// without the target named and prints its blob's SHA-256 (and its
// delta's); once published, the relay's repository lets that blob be
// removed and still refuses the kept target's. A name targets.json does
// not hold is refused and signs nothing.
func TestUpdateDropTarget(t *testing.T) {
	op := didtest.Key(t, 1)
	srv, repo, relayKeys := updateRelay(t, op.DID())
	dir, _ := keysInit(t, relayKeys)
	old, kept := filepath.Join(t.TempDir(), "old"), filepath.Join(t.TempDir(), "kept")
	os.WriteFile(old, bytes.Repeat([]byte("v2"), 20_000), 0o600)
	os.WriteFile(kept, bytes.Repeat([]byte("v3"), 20_000), 0o600)
	updCtl(t, "update", "sign-target", "--dir", dir, "--name", "torpor-agent/2/linux-armv6", "--version", "2", "--goarm", "6", old)
	updCtl(t, "update", "sign-target", "--dir", dir, "--name", "torpor-agent/3/linux-armv6", "--version", "3", "--goarm", "6", "--delta-from", old, kept)
	updCtl(t, "update", "publish", "--dir", dir, "--relay", srv.URL, "--key", keyFile(t, op), "--root", "1")
	var errb bytes.Buffer
	if code := run(context.Background(), []string{"update", "drop-target", "--dir", dir, "--name", "torpor-agent/9/linux-armv6"}, &bytes.Buffer{}, &errb); code == 0 ||
		!strings.Contains(errb.String(), "no target") {
		t.Errorf("dropping an unknown target = %d, %q; want a refusal", code, errb.String())
	}
	out := updCtl(t, "update", "drop-target", "--dir", dir, "--name", "torpor-agent/2/linux-armv6")
	targets, err := metadata.Targets().FromFile(filepath.Join(dir, "targets.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := targets.Signed.Targets["torpor-agent/2/linux-armv6"]; ok || targets.Signed.Version != 4 || len(targets.Signed.Targets) != 1 {
		t.Fatalf("targets version %d holds %d targets; want version 4 without the dropped one", targets.Signed.Version, len(targets.Signed.Targets))
	}
	oldSHA := sha256Hex(t, old)
	if !strings.Contains(out, "signed targets version 4 without torpor-agent/2/linux-armv6") || !strings.Contains(out, "--sha256 "+oldSHA) {
		t.Errorf("drop-target printed %q; want the version and --sha256 %s", out, oldSHA)
	}
	if _, err := repo.RemoveBlob(oldSHA); !errors.Is(err, updaterepo.ErrNamed) {
		t.Errorf("removing the old build before the publish: %v; want ErrNamed", err)
	}
	updCtl(t, "update", "publish", "--dir", dir, "--relay", srv.URL, "--key", keyFile(t, op))
	if n, err := repo.RemoveBlob(oldSHA); err != nil || n != 40_000 {
		t.Errorf("removing the old build once dropped and published = %d, %v; want 40000", n, err)
	}
	if _, err := repo.RemoveBlob(sha256Hex(t, kept)); !errors.Is(err, updaterepo.ErrNamed) {
		t.Errorf("removing the kept build: %v; want ErrNamed", err)
	}
}

func sha256Hex(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
