package update_test

import (
	"context"
	"crypto/ed25519"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/tufsign"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/server"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

type admitAll struct{}

func (admitAll) Admit(context.Context, did.DID) (queuebounds.Bounds, error) {
	return queuebounds.Default(), nil
}

func (admitAll) Publish(context.Context, did.DID, wire.State) (wire.Accepted, error) {
	return wire.Accepted{Bounds: queuebounds.Default()}, nil
}

func (admitAll) Linked(did.DID, bool) {}

// relayWith starts the relay's link server over a real loopback WebSocket
// with updates as its repository (nil: none) and dials it as a device.
func relayWith(t *testing.T, updates server.Updates) *link.Client {
	q, err := queue.OpenBolt(filepath.Join(t.TempDir(), "q.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := &server.Server{Queue: q, Agents: admitAll{}}
	if updates != nil {
		srv.Updates = updates
	}
	h := httptest.NewServer(srv)
	srv.Verifier = &bearer.Verifier{Audience: h.URL}
	c, err := link.Dial(context.Background(), link.Config{RelayURL: h.URL, Key: didtest.Key(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); srv.Close(); h.Close(); q.Close() })
	return c
}

// TestOverTheLink: the owner's root and targets go into the relay's
// bbolt repository; a device fetches metadata and a 300 kB target over
// its link in 64 KiB ranges, checks it all with go-tuf/v2 and gets the
// verified file. A relay without a repository is a failed fetch that
// says so.
func TestOverTheLink(t *testing.T) {
	keys := map[string]ed25519.PrivateKey{}
	pubs := map[string]ed25519.PublicKey{}
	for _, role := range []string{"root", "targets", "snapshot", "timestamp"} {
		pubs[role], keys[role], _ = ed25519.GenerateKey(nil)
	}
	root, err := tufsign.NewRoot(tufsign.Roles{Root: []ed25519.PublicKey{pubs["root"]}, RootThreshold: 1,
		Targets: []ed25519.PublicKey{pubs["targets"]}, TargetsThreshold: 1, Snapshot: pubs["snapshot"], Timestamp: pubs["timestamp"]},
		t0.AddDate(1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	rootBytes, _ := tufsign.Sign(root, keys["root"])
	repo, err := updaterepo.Open(updaterepo.Config{Path: filepath.Join(t.TempDir(), "updates.db"),
		Snapshot: keys["snapshot"], Timestamp: keys["timestamp"], Clock: clocktest.New(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	build := payload(2, 300_000)
	targets := metadata.Targets(t0.AddDate(0, 3, 0))
	tufsign.AddTarget(targets, "torpor-agent/2/linux-armv6", build, update.CustomKey, agentFor(2))
	targetsBytes, _ := tufsign.Sign(targets, keys["targets"])
	if err := repo.SetRoot(rootBytes); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.AddBlob(build); err != nil {
		t.Fatal(err)
	}
	if err := repo.Publish(targetsBytes); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "meta"), 0o700)
	os.WriteFile(filepath.Join(dir, "meta", "root.json"), rootBytes, 0o600)
	device := func(l *link.Client) *update.Client {
		c, err := update.New(update.Config{Dir: dir, Source: update.LinkSource(l), Device: zero, Installed: 1,
			Now: func() (time.Time, error) { return t0.Add(time.Hour), nil }})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	_, err = device(relayWith(t, nil)).Check(context.Background())
	refusal(t, err, update.Fetch, "this relay hosts no update repository")

	res, err := device(relayWith(t, repo)).Check(context.Background())
	verified(t, res, err, build)
}
