package relay

import (
	"bytes"
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/session/kpcheck"
	"github.com/torpor-dev/torpor/session/sessiontest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestPublishedKeyPackagesVerified: with the relay binary's verifier
// (session/kpcheck), a state carrying junk with a valid 4-byte header, a
// valid KeyPackage bound to another DID, one bound to the device's DID
// but another signature key, a duplicate, or more than the pool holds is
// refused, and the pool keeps the genuine KeyPackages; a state flagged
// ReplaceKeyPackages replaces the pool.
func TestPublishedKeyPackagesVerified(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.KeyPackages = kpcheck.Verifier{} })
	dev, other := didtest.Key(t, 1), didtest.Key(t, 2)
	h.admit(t, dev) // the pool's own cap, not probation's
	g1, g2, g3 := sessiontest.KeyPackage(t, dev.DID(), dev, h.clk.Now()), sessiontest.KeyPackage(t, dev.DID(), dev, h.clk.Now()), sessiontest.KeyPackage(t, dev.DID(), dev, h.clk.Now())
	c := h.device(t, dev, "always_on", deviceOpts{kps: [][]byte{g1, g2}})
	publish := func(kps [][]byte, replace bool) (wire.Accepted, error) {
		st := h.state(t, dev, c.Hello(), "always_on", deviceOpts{kps: kps})
		st.ReplaceKeyPackages = replace
		return c.Publish(context.Background(), st)
	}
	junk := append([]byte{0, 1, 0, 5}, bytes.Repeat([]byte{0xa5}, 300)...)
	for _, tt := range []struct {
		name string
		kps  [][]byte
		want string
	}{
		{"junk after a valid header", [][]byte{junk}, "key package 0"},
		{"another DID's KeyPackage", [][]byte{g3, sessiontest.KeyPackage(t, other.DID(), other, h.clk.Now())}, "key package 1"},
		{"the device's DID, another key", [][]byte{sessiontest.KeyPackage(t, dev.DID(), other, h.clk.Now())}, "key package 0"},
		{"a duplicate of one pooled", [][]byte{g1}, "duplicate"},
		{"a duplicate in the frame", [][]byte{g3, g3}, "duplicate"},
		{"more than the pool holds", slices.Repeat([][]byte{g3}, agents.MaxKeyPackages+1), "at most 256"},
	} {
		if _, err := publish(tt.kps, false); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Publish = %v, want a refusal naming %q", tt.name, err, tt.want)
		}
	}
	h.checkPool(t, dev.DID(), [][]byte{g1, g2})
	if _, err := publish([][]byte{g3}, true); err != nil {
		t.Fatalf("Publish replacing the pool = %v", err)
	}
	h.checkPool(t, dev.DID(), [][]byte{g3})
	if _, err := publish([][]byte{g1}, false); err != nil {
		t.Errorf("Publish of a KeyPackage no longer pooled = %v", err)
	}
	h.checkPool(t, dev.DID(), [][]byte{g3, g1})
}

func (h *harness) checkPool(tb testing.TB, agent did.DID, want [][]byte) {
	tb.Helper()
	pool, _, err := h.states.KeyPackages(context.Background(), agent.String())
	if err != nil {
		tb.Fatal(err)
	}
	if len(pool) != len(want) {
		tb.Fatalf("pool holds %d KeyPackages, want %d", len(pool), len(want))
	}
	for i := range want {
		if !bytes.Equal(pool[i], want[i]) {
			tb.Errorf("pool[%d] is not the genuine KeyPackage published", i)
		}
	}
}

// TestPooledJunkNotServed: KeyPackages that entered the pool unchecked (a
// relay of an earlier version pooled junk behind a valid header, or one
// expired since) are dropped when their turn comes, and the genuine one
// behind them is served; a last-resort KeyPackage that fails is not
// served.
func TestPooledJunkNotServed(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.KeyPackages = kpcheck.Verifier{} })
	dev := didtest.Key(t, 1)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	st, err := h.states.Get(context.Background(), dev.DID().String())
	if err != nil {
		t.Fatal(err)
	}
	g := sessiontest.KeyPackage(t, dev.DID(), dev, h.clk.Now())
	junk := append([]byte{0, 1, 0, 5}, bytes.Repeat([]byte{0xa5}, 100)...)
	if err := h.states.Put(context.Background(), dev.DID().String(), st, [][]byte{junk, kp(2), g}, junk); err != nil {
		t.Fatal(err)
	}
	path := "/a/" + dev.DID().String() + "/mls/key-package"
	if r := h.getKP(t, path); r.status != 200 || r.json["wire"] != base64.StdEncoding.EncodeToString(g) || r.json["lastResort"] != nil {
		t.Errorf("first fetch: %d %s; want the genuine KeyPackage behind the junk", r.status, r.body)
	}
	if r := h.getKP(t, path); r.status != 503 || r.json["error"] != "no_key_package" {
		t.Errorf("second fetch, only a junk last resort left: %d %s; want 503 no_key_package", r.status, r.body)
	}
}

// TestPoolFullOfJunkDropped: a pool filled to the cap with junk that an
// earlier relay version took unchecked does not keep the device from
// publishing: the junk is dropped and the genuine KeyPackages pooled.
func TestPoolFullOfJunkDropped(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.KeyPackages = kpcheck.Verifier{} })
	dev := didtest.Key(t, 1)
	h.admit(t, dev) // a pool larger than probation's
	c := h.device(t, dev, "always_on", deviceOpts{})
	st, err := h.states.Get(context.Background(), dev.DID().String())
	if err != nil {
		t.Fatal(err)
	}
	junk := make([][]byte, agents.MaxKeyPackages)
	for i := range junk {
		junk[i] = append([]byte{0, 1, 0, 5}, byte(i), byte(i>>8), 0, 0, 0)
	}
	if err := h.states.Put(context.Background(), dev.DID().String(), st, junk, nil); err != nil {
		t.Fatal(err)
	}
	g := sessiontest.KeyPackage(t, dev.DID(), dev, h.clk.Now())
	if _, err := c.Publish(context.Background(), h.state(t, dev, c.Hello(), "always_on", deviceOpts{kps: [][]byte{g}})); err != nil {
		t.Fatalf("Publish into a pool full of junk = %v", err)
	}
	h.checkPool(t, dev.DID(), [][]byte{g})
}
