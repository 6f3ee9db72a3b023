//go:build integration

package updates

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

var updateCheck = regexp.MustCompile(`msg="update check" `)

// ctl runs the torporctl binary and returns its standard output.
func ctl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t, "torporctl"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("torporctl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// keygen writes a key file with torporctl and returns its did:key.
func keygen(t *testing.T, path string) string {
	return strings.TrimSpace(ctl(t, "keygen", path))
}

// world is a relay hosting an update repository, its operator, and the
// owner's directory with root version 1.
type world struct {
	dir, opKey, owner string
	relay             *relaytest.Relay
}

func newWorld(t *testing.T) *world {
	w := &world{dir: t.TempDir()}
	w.opKey = filepath.Join(w.dir, "op.key")
	op := keygen(t, w.opKey)
	snap, ts := filepath.Join(w.dir, "snapshot.key"), filepath.Join(w.dir, "timestamp.key")
	snapDID, tsDID := keygen(t, snap), keygen(t, ts)
	w.relay = relaytest.Start(t, filepath.Join(w.dir, "relay"), "--operator", op, "--admission", "open",
		"--update-snapshot-key", snap, "--update-timestamp-key", ts)
	w.owner = filepath.Join(w.dir, "owner")
	ctl(t, "update", "keys", "init", "--dir", w.owner, "--relay-snapshot", snapDID, "--relay-timestamp", tsDID)
	return w
}

// agent starts torpor-agent, always on, provisioned with the owner's
// first root, running build version installed.
func (w *world) agent(t *testing.T, name string, installed uint64) (*testenv.Proc, string) {
	dir := filepath.Join(w.dir, name)
	key := filepath.Join(w.dir, name+".key")
	keygen(t, key)
	meta := filepath.Join(dir, "update", "meta")
	if err := os.MkdirAll(meta, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.ReadFile(filepath.Join(w.owner, "1.root.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(meta, "root.json"), root, 0o600)
	conf, _ := json.Marshal(map[string]any{"version": 1, "update": map[string]any{"version": installed, "budgetBytes": 64 << 20}})
	confFile := filepath.Join(w.dir, name+".json")
	os.WriteFile(confFile, conf, 0o600)
	p := testenv.Start(t, testenv.Binary(t, "torpor-agent"), "--config", confFile, "--key", key, "--data-dir", dir,
		"--relay", w.relay.URL, "--mode", "always_on", "--name", name, "--purposes", "comms:*", "--handler", "*=exec:/bin/true")
	return p, dir
}

// TestPublishedTargetReachesAgents: the owner signs the torpor-agent
// binary itself as version 2 for this machine's architecture and
// publishes it; an agent running version 1 fetches it over its link,
// verifies it and keeps it in update/verified/ under its SHA-256; an
// agent running version 5 refuses it as a rollback.
func TestPublishedTargetReachesAgents(t *testing.T) {
	w := newWorld(t)
	build := testenv.Binary(t, "torpor-agent")
	data, err := os.ReadFile(build)
	if err != nil {
		t.Fatal(err)
	}
	ctl(t, "update", "sign-target", "--dir", w.owner, "--name", "torpor-agent/2/linux-"+goruntime.GOARCH, "--version", "2",
		"--goarch", goruntime.GOARCH, "--goarm", "", build)
	out := ctl(t, "update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey, "--root", "1")
	if !strings.Contains(out, "targets.json") {
		t.Fatalf("publish printed %q", out)
	}
	older, olderDir := w.agent(t, "plot-1", 1)
	older.Wait(t, updateCheck, "outcome=verified", "version=2", fmt.Sprintf("bytes=%d", len(data)))
	sum := sha256.Sum256(data)
	got, err := os.ReadFile(filepath.Join(olderDir, "update", "verified", hex.EncodeToString(sum[:])))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the verified file: %d bytes, %v; want the %d bytes published", len(got), err, len(data))
	}
	newer, _ := w.agent(t, "plot-5", 5)
	newer.Wait(t, updateCheck, "outcome=refused", "reason=rollback", "older than the installed 5")
}
