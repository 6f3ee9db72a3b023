package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
)

// TestUpdateKeyCeremony: keys init with two root keys and threshold 2,
// sign-target, publish to a relay's repository; a device provisioned
// with root version 1 verifies the build and its custom fields. A revoke
// that would leave fewer keys than the threshold is refused; add then
// revoke makes root version 3, signed by old and new keys, which the
// relay and the device walk to.
func TestUpdateKeyCeremony(t *testing.T) {
	op := didtest.Key(t, 1)
	opFile := keyFile(t, op)
	srv, repo, relayKeys := updateRelay(t, op.DID())
	dir, out := keysInit(t, relayKeys, "--root-keys", "2", "--root-threshold", "2")
	if strings.Count(out, "root key") != 2 || strings.Count(out, "targets key") != 1 {
		t.Fatalf("keys init printed %q", out)
	}
	build := filepath.Join(t.TempDir(), "torpor-agent")
	os.WriteFile(build, bytes.Repeat([]byte("v2"), 50_000), 0o600)
	updCtl(t, "update", "sign-target", "--dir", dir, "--name", "torpor-agent/2/linux-armv6", "--version", "2", "--goarm", "6",
		"--board", "rpi-zero-w", "--window", "any", build)
	updCtl(t, "update", "publish", "--dir", dir, "--relay", srv.URL, "--key", opFile, "--root", "1")
	devDir := provisioned(t, dir)
	res, err := deviceCheck(t, devDir, repo, 1)
	if err != nil || res.Custom.Version != 2 || res.Custom.Board != "rpi-zero-w" || res.Bytes != 100_000 {
		t.Fatalf("device: %+v, %v", res, err)
	}

	firstRoot := strings.Fields(strings.SplitN(out, "\n", 2)[0])[3]
	var errb bytes.Buffer
	if code := run(context.Background(), []string{"update", "keys", "revoke", "--dir", dir, "--role", "root", firstRoot}, &bytes.Buffer{}, &errb); code == 0 ||
		!strings.Contains(errb.String(), "would leave 1 root keys for a threshold of 2") {
		t.Errorf("revoking below the threshold = %d, %q", code, errb.String())
	}
	updCtl(t, "update", "keys", "add", "--dir", dir, "--role", "root")
	updCtl(t, "update", "keys", "revoke", "--dir", dir, "--role", "root", firstRoot)
	updCtl(t, "update", "sign-target", "--dir", dir, "--name", "torpor-agent/3/linux-armv6", "--version", "3", "--goarm", "6", build)
	updCtl(t, "update", "publish", "--dir", dir, "--relay", srv.URL, "--key", opFile, "--root", "2")
	res, err = deviceCheck(t, devDir, repo, 2)
	if err != nil || res.Target != "torpor-agent/3/linux-armv6" {
		t.Fatalf("device after the root rotation: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keys", "root-1.retired")); err != nil {
		t.Errorf("the revoked root key file: %v", err)
	}
}

// TestUpdateKeysRelay: the relay's online keys are replaced: keys relay
// writes root version 2 naming the new ones; the relay, restarted on the
// same repository with them, takes it from publish --root 2 and signs the
// published targets again, which a device provisioned with version 1
// takes.
func TestUpdateKeysRelay(t *testing.T) {
	op := didtest.Key(t, 1)
	opFile := keyFile(t, op)
	path := filepath.Join(t.TempDir(), "updates.db")
	oldKeys := [2]*did.PrivateKey{didtest.Key(t, 40), didtest.Key(t, 41)}
	srv, repo := updateRelayAt(t, op.DID(), path, oldKeys)
	dir, _ := keysInit(t, oldKeys)
	build := filepath.Join(t.TempDir(), "app")
	os.WriteFile(build, []byte("build 2"), 0o600)
	updCtl(t, "update", "sign-target", "--dir", dir, "--name", "app/2", "--version", "2", "--goarm", "6", build)
	updCtl(t, "update", "publish", "--dir", dir, "--relay", srv.URL, "--key", opFile, "--root", "1")
	srv.Close()
	repo.Close()

	newKeys := [2]*did.PrivateKey{didtest.Key(t, 42), didtest.Key(t, 43)}
	updCtl(t, "update", "keys", "relay", "--dir", dir, "--relay-snapshot", newKeys[0].DID().String(), "--relay-timestamp", newKeys[1].DID().String())
	srv, repo = updateRelayAt(t, op.DID(), path, newKeys)
	updCtl(t, "update", "publish", "--dir", dir, "--relay", srv.URL, "--key", opFile, "--root", "2")
	devDir := provisioned(t, dir)
	res, err := deviceCheck(t, devDir, repo, 1)
	if err != nil || res.Target != "app/2" {
		t.Fatalf("a device after the relay's keys were replaced: %+v, %v", res, err)
	}
}
