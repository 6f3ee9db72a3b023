package relay

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestLastResortKeyPackage: once the pool is empty the relay serves the
// agent's last-resort KeyPackage (RFC 9420, Section 16.8) to every fetch,
// keeps it, and says so; the rate limit still applies; the state-ok names
// it; a new one replaces it; it survives a restart; a malformed one is
// refused.
func TestLastResortKeyPackage(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.KeyPackageRate = 4 })
	dev := didtest.Key(t, 1)
	h.publishOffline(t, dev, "sleep", deviceOpts{kps: [][]byte{kp(1)}, lastRes: kp(9)})
	path := "/a/" + dev.DID().String() + "/mls/key-package"
	b64 := base64.StdEncoding.EncodeToString
	if r := h.getKP(t, path); r.status != 200 || r.json["wire"] != b64(kp(1)) || r.json["lastResort"] != nil {
		t.Fatalf("first fetch: %d %s, want the pool's KeyPackage without lastResort", r.status, r.body)
	}
	for i := range 3 {
		r := h.getKP(t, path)
		if r.status != 200 || r.json["wire"] != b64(kp(9)) || r.json["lastResort"] != true || r.json["did"] != dev.DID().String() {
			t.Fatalf("fetch %d from the empty pool: %d %s, want the last-resort KeyPackage with \"lastResort\": true", i, r.status, r.body)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("fetch %d: Cache-Control %q, want no-store", i, r.header.Get("Cache-Control"))
		}
	}
	if r := h.getKP(t, path); r.status != 429 {
		t.Errorf("fifth fetch at 4 a minute: %d, want 429", r.status)
	}

	c := h.dial(t, dev)
	publish := func(o deviceOpts) (wire.Accepted, error) {
		return c.Publish(context.Background(), h.state(t, dev, c.Hello(), "sleep", o))
	}
	ok, err := publish(deviceOpts{})
	if err != nil || ok.Held == nil || !bytes.Equal(ok.Held.LastResort, wire.KeyPackageDigest(kp(9))) || len(ok.Held.Digests) != 0 {
		t.Fatalf("state-ok = %+v, %v; want it to name the last-resort KeyPackage and an empty pool", ok.Held, err)
	}
	if _, err := publish(deviceOpts{lastRes: []byte{1, 2, 3}}); err == nil {
		t.Error("a malformed last-resort KeyPackage was accepted")
	}
	ok, err = publish(deviceOpts{lastRes: kp(8)})
	if err != nil || ok.Held == nil || !bytes.Equal(ok.Held.LastResort, wire.KeyPackageDigest(kp(8))) {
		t.Fatalf("state-ok after a new one = %+v, %v; want it named", ok.Held, err)
	}

	// Durable, and kept across fetches after a restart.
	h.states.Close()
	s2, err := agents.OpenBolt(h.dir+"/agents.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for range 2 {
		if got, last, err := s2.TakeKeyPackage(context.Background(), dev.DID().String()); err != nil || !last || !bytes.Equal(got, kp(8)) {
			t.Errorf("after reopen: TakeKeyPackage = %x, %v, %v; want kp(8), the last-resort one", got, last, err)
		}
	}
	if _, lr, err := s2.KeyPackages(context.Background(), dev.DID().String()); err != nil || !bytes.Equal(lr, kp(8)) {
		t.Errorf("after reopen: KeyPackages = last resort %x, %v; want kp(8)", lr, err)
	}
	if _, _, err := s2.TakeKeyPackage(context.Background(), didtest.Key(t, 2).DID().String()); err != agents.ErrNoKeyPackage {
		t.Errorf("an agent without one: TakeKeyPackage = %v, want agents.ErrNoKeyPackage", err)
	}
}
