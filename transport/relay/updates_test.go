package relay

import (
	"context"
	"crypto/ed25519"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/tufsign"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// updateEnv is a relay with an update repository in bbolt, an operator,
// and the owner's signed root and targets (and targets signed by a
// stranger).
type updateEnv struct {
	h                           *harness
	api                         *operatorapi.Client
	audit                       *audit.Bolt
	root, blob, signed, strange []byte
}

func newUpdateEnv(t *testing.T) *updateEnv {
	op := didtest.Key(t, 60)
	keys := map[string]ed25519.PrivateKey{}
	pubs := map[string]ed25519.PublicKey{}
	for _, role := range []string{"root", "targets", "snapshot", "timestamp"} {
		pubs[role], keys[role], _ = ed25519.GenerateKey(nil)
	}
	al, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.Close() })
	h := newHarness(t, func(c *Config) {
		c.Stores.Audit = al
		repo, err := updaterepo.Open(updaterepo.Config{Path: filepath.Join(t.TempDir(), "updates.db"),
			Snapshot: keys["snapshot"], Timestamp: keys["timestamp"], Clock: c.Clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { repo.Close() })
		c.Stores.Updates = repo
		c.Access.Operators = []did.DID{op.DID()}
	})
	e := &updateEnv{h: h, audit: al, api: &operatorapi.Client{Origin: h.relay.cfg.PublicURL, Key: op, Clock: h.clk}, blob: []byte("an agent build")}
	root, _ := tufsign.NewRoot(tufsign.Roles{Root: []ed25519.PublicKey{pubs["root"]}, RootThreshold: 1,
		Targets: []ed25519.PublicKey{pubs["targets"]}, TargetsThreshold: 1, Snapshot: pubs["snapshot"], Timestamp: pubs["timestamp"]},
		t0.AddDate(1, 0, 0))
	e.root, _ = tufsign.Sign(root, keys["root"])
	targets := metadata.Targets(t0.AddDate(0, 3, 0))
	tufsign.AddTarget(targets, "agent", e.blob, "torpor", map[string]any{"version": 2, "goarch": "arm"})
	e.strange, _ = tufsign.Sign(targets, didtest.Key(t, 61).Ed25519())
	e.signed, _ = tufsign.Sign(targets, keys["targets"])
	return e
}

// TestUpdateUploadAndLink: an operator uploads the owner's root, a blob
// and signed targets through the operator endpoints; a linked device
// reads the timestamp the relay signed; targets signed by a stranger are
// refused with go-tuf's reason, a non-operator is refused, and the
// relay re-signs the timestamp on its timer past half its life.
func TestUpdateUploadAndLink(t *testing.T) {
	e := newUpdateEnv(t)
	ctx := context.Background()
	if _, err := e.api.PutUpdate(ctx, "root", e.root); err != nil {
		t.Fatal(err)
	}
	ans, err := e.api.PutUpdate(ctx, "blob", e.blob)
	if err != nil || len(ans.SHA256) != 64 || ans.Used < int64(len(e.blob)) {
		t.Fatalf("blob: %+v, %v", ans, err)
	}
	if _, err := e.api.PutUpdate(ctx, "targets", e.strange); err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "not enough signatures") {
		t.Errorf("targets signed by a stranger: %v", err)
	}
	if _, err := e.api.PutUpdate(ctx, "targets", e.signed); err != nil {
		t.Fatal(err)
	}
	other := &operatorapi.Client{Origin: e.api.Origin, Key: didtest.Key(t, 62), Clock: e.h.clk}
	if _, err := other.PutUpdate(ctx, "targets", e.signed); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a non-operator's upload: %v", err)
	}
	e.checkAudit(t)
	c := e.h.dial(t, didtest.Key(t, 1))
	version := func() int64 {
		b, err := c.Update(ctx, wire.UpdateRequest{Kind: wire.UpdateMeta, Name: "timestamp.json", Max: 16 << 10})
		if err != nil {
			t.Fatal(err)
		}
		ts, err := metadata.Timestamp().FromBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		return ts.Signed.Version
	}
	if v := version(); v != 1 {
		t.Errorf("timestamp version %d; want 1", v)
	}
	e.h.clk.Advance(13 * time.Hour)
	e.h.relay.refreshUpdates()
	if v := version(); v != 2 {
		t.Errorf("after 13 h and the relay's refresh: timestamp version %d; want 2", v)
	}
}

// checkAudit: every upload is in the audit log, newest first, the
// refused one with go-tuf's reason and the non-operator's too.
func (e *updateEnv) checkAudit(t *testing.T) {
	page, err := e.audit.List(context.Background(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range page.Records {
		if r.Action == audit.ActionUpdate {
			got = append(got, r.Outcome+" "+r.Detail+" "+r.Reason)
		}
	}
	if len(got) != 5 || !strings.HasPrefix(got[1], "ok targets") || !strings.HasPrefix(got[2], "refused targets") ||
		!strings.Contains(got[2], "not enough signatures") || !strings.HasPrefix(got[4], "ok root") {
		t.Errorf("audited uploads %q", got)
	}
}

// TestNoUpdateRepository: a relay without one answers the operator 404
// and the device's update frame no-updates.
func TestNoUpdateRepository(t *testing.T) {
	op := didtest.Key(t, 60)
	h := newHarness(t, func(c *Config) { c.Access.Operators = []did.DID{op.DID()} })
	api := &operatorapi.Client{Origin: h.relay.cfg.PublicURL, Key: op, Clock: h.clk}
	if _, err := api.PutUpdate(context.Background(), "root", []byte("{}")); err == nil || !strings.Contains(err.Error(), "no_updates") {
		t.Errorf("upload to a relay without a repository: %v", err)
	}
	c := h.dial(t, didtest.Key(t, 1))
	_, err := c.Update(context.Background(), wire.UpdateRequest{Kind: wire.UpdateMeta, Name: "timestamp.json"})
	if re, ok := err.(*wire.RemoteError); !ok || re.Code != wire.CodeNoUpdates {
		t.Errorf("update frame to a relay without a repository: %v", err)
	}
}
