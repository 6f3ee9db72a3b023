package relay

import (
	"encoding/base64"
	"encoding/binary"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
)

// TestKeyPackageBudget: made-up DIDs (2,000 here, 10,000 against the
// binary in test/hostile) take no more than the agent's
// budget per window from its pool; beyond it every caller, the legitimate
// sender among them, gets the last-resort KeyPackage; the next window
// gives out the pool again.
func TestKeyPackageBudget(t *testing.T) {
	const budget, flood = 5, 2000
	h := newHarness(t, func(c *Config) {
		c.Limits.KeyPackageBudget, c.Limits.KeyPackageBudgetWindow = budget, time.Hour
		c.Limits.KeyPackageRate = 1 << 20 // this test is about the budget, not per-caller rates
	})
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.admit(t, dev) // a pool larger than probation's
	var pool [][]byte
	for i := range 20 {
		pool = append(pool, kp(byte(10+i)))
	}
	h.publishOffline(t, dev, "sleep", deviceOpts{kps: pool, lastRes: kp(9)})
	path := "/a/" + dev.DID().String() + "/mls/key-package"
	fromPool := 0
	for i := range flood {
		r := h.getAs(t, path, madeUp(t, i))
		if r.status != 200 {
			t.Fatalf("made-up caller %d: %d %s", i, r.status, r.body)
		}
		if r.json["lastResort"] != true {
			fromPool++
		}
		if i%200 == 0 {
			h.clk.Advance(time.Second)
		}
	}
	if fromPool != budget {
		t.Errorf("%d made-up DIDs took %d KeyPackages from the pool, want the budget, %d", flood, fromPool, budget)
	}
	r := h.getAs(t, path, alice)
	if r.status != 200 || r.json["wire"] != base64.StdEncoding.EncodeToString(kp(9)) || r.json["lastResort"] != true {
		t.Errorf("a legitimate sender after the flood: %d %s, want the last-resort KeyPackage", r.status, r.body)
	}
	if n, _, _ := h.states.KeyPackages(t.Context(), dev.DID().String()); len(n) != len(pool)-budget {
		t.Errorf("pool holds %d, want %d", len(n), len(pool)-budget)
	}
	h.clk.Advance(time.Hour)
	if r := h.getAs(t, path, alice); r.status != 200 || r.json["lastResort"] != nil {
		t.Errorf("next window: %d %s, want one from the pool", r.status, r.body)
	}
}

// TestKeyPackageBudgetWithoutLastResort: beyond the budget, an agent
// without a last-resort KeyPackage answers 429 key_package_budget with
// Retry-After, and its pool keeps the rest.
func TestKeyPackageBudgetWithoutLastResort(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.KeyPackageBudget, c.Limits.KeyPackageBudgetWindow = 1, time.Hour })
	dev := didtest.Key(t, 1)
	h.publishOffline(t, dev, "sleep", deviceOpts{kps: [][]byte{kp(1), kp(2)}})
	path := "/a/" + dev.DID().String() + "/mls/key-package"
	if r := h.getAs(t, path, didtest.Key(t, 2)); r.status != 200 {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	r := h.getAs(t, path, didtest.Key(t, 3))
	if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); r.status != 429 || r.json["error"] != "key_package_budget" || ra < 1 {
		t.Errorf("beyond the budget: %d %s Retry-After %q, want 429 key_package_budget", r.status, r.body, r.header.Get("Retry-After"))
	}
	if n, _, _ := h.states.KeyPackages(t.Context(), dev.DID().String()); len(n) != 1 {
		t.Errorf("pool holds %d, want 1", len(n))
	}
}

// madeUp returns the key of the i-th made-up caller.
func madeUp(tb testing.TB, i int) *did.PrivateKey {
	tb.Helper()
	seed := make([]byte, 32)
	binary.BigEndian.PutUint32(seed, uint32(i)+1<<24)
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// TestClientIPRightMostUntrusted: behind trusted proxies the caller's
// address is the right-most X-Forwarded-For entry that is not a trusted
// proxy; what the client put to its left is ignored.
func TestClientIPRightMostUntrusted(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	cases := []struct {
		xff       []string
		trust     bool
		want      string
		nameOfTry string
	}{
		{[]string{"6.6.6.6, 203.0.113.7"}, true, "203.0.113.7", "spoofed entry to the left"},
		{[]string{"6.6.6.6, 203.0.113.7, 10.1.2.3"}, true, "203.0.113.7", "two proxies"},
		{[]string{"6.6.6.6", "203.0.113.7, 10.1.2.3"}, true, "203.0.113.7", "two headers"},
		{[]string{"10.9.9.9, fd00::1"}, true, "192.0.2.1", "only trusted proxies: the peer"},
		{[]string{"6.6.6.6"}, false, "192.0.2.1", "not trusted: the peer"},
		{nil, true, "192.0.2.1", "no header"},
	}
	for _, c := range cases {
		s := &Relay{cfg: Config{HTTP: HTTP{TrustForwardedFor: c.trust, TrustedProxies: trusted}}}
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "192.0.2.1:4242"
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := s.clientIP(r); got != c.want {
			t.Errorf("%s: clientIP = %q, want %q", c.nameOfTry, got, c.want)
		}
	}
}

func TestParseTrustedProxy(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.0/8": "10.0.0.0/8", "10.1.2.3/8": "10.0.0.0/8", "192.0.2.1": "192.0.2.1/32", "::1": "::1/128"} {
		if p, err := ParseTrustedProxy(in); err != nil || p.String() != want {
			t.Errorf("ParseTrustedProxy(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, in := range []string{"", "10.0.0.0/33", "proxy.example"} {
		if _, err := ParseTrustedProxy(in); err == nil {
			t.Errorf("ParseTrustedProxy(%q) accepted", in)
		}
	}
}
