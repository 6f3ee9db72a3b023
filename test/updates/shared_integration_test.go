//go:build integration

package updates

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// TestRepositorySharedOnJetStream: two relay binaries with the same
// online keys on one NATS JetStream server (--store jetstream) serve one
// update repository. The owner publishes through relay 1 with torporctl;
// an agent linked to relay 2 fetches the target up to its budget, and,
// started again linked to relay 1, resumes where it stopped and verifies
// it: the range reads of both relays are of one blob.
func TestRepositorySharedOnJetStream(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	w := newWorld(t, "--store", "jetstream", "--nats", srv.URL(), "--nats-replicas", "1", "--nats-monitor", srv.MonitorURL())
	second := relaytest.Start(t, t.TempDir(), w.relayArgs...)
	target := filepath.Join(w.dir, "build")
	data := make([]byte, 700_000)
	rand.Read(data)
	os.WriteFile(target, data, 0o600)
	ctl(t, "update", "sign-target", "--dir", w.owner, "--name", "app/2", "--version", "2", "--goarch", goruntime.GOARCH, "--goarm", "", target)
	ctl(t, "update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey, "--root", "1")
	if _, err := os.Stat(filepath.Join(w.dir, "relay", "updates.db")); err == nil {
		t.Error("relay 1 on JetStream made updates.db in its data directory")
	}

	const budget = 256 << 10
	agent, dir := w.agentAt(t, second.URL, "plot-1", 1, budget)
	agent.Wait(t, updateCheck, "outcome=refused", "reason=budget", fmt.Sprintf("bytes=%d", budget))
	agent.Stop()
	again, _ := w.agentAt(t, w.relay.URL, "plot-1", 1, 64<<20)
	again.Wait(t, updateCheck, "outcome=verified", "target=app/2", fmt.Sprintf("bytes=%d", len(data)-budget))
	sum := sha256.Sum256(data)
	got, err := os.ReadFile(filepath.Join(dir, "update", "verified", hex.EncodeToString(sum[:])))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the verified file: %d bytes, %v; want the %d published", len(got), err, len(data))
	}
}
