package envelope

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
)

func testKey(t *testing.T, b byte) *did.PrivateKey {
	t.Helper()
	k, err := did.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func scopeAt(act, res string, perTx, cum int64, depth int, decay int64) Scope {
	return Scope{V: Version, Act: act, Res: res, Depth: &depth, DecayMaxSec: &decay,
		Cap: &Cap{MaxPerTx: perTx, MaxCumulative: cum, Unit: "USD", Window: WindowUTCDay},
		CP:  &Counterparties{Allow: []string{"did:web:vendora.com"}}}
}

type chainSetup struct {
	principal, a, b *did.PrivateKey
	device          string
}

func newChainSetup(t *testing.T) chainSetup {
	return chainSetup{principal: testKey(t, 1), a: testKey(t, 2), b: testKey(t, 3), device: testKey(t, 4).DID().String()}
}

func (s chainSetup) issue(t *testing.T, from, to *did.PrivateKey, aud string, exp time.Time, env ...Scope) string {
	t.Helper()
	tok, err := Issue(from, Claims{Iss: from.DID().String(), Sub: to.DID().String(), Aud: aud,
		Iat: t0.Unix(), Exp: exp.Unix(), Envelope: env})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestPassportRoundTrip(t *testing.T) {
	s := newChainSetup(t)
	tok := s.issue(t, s.principal, s.a, s.device, t0.Add(10*time.Minute), scopeAt("finance:pay", "ap2://rails/stripe/**", 100, 1000, 2, 600))
	c, err := Verify(tok, s.device, clocktest.New(t0.Add(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Iss != s.principal.DID().String() || c.Sub != s.a.DID().String() || len(c.Envelope) != 1 {
		t.Errorf("claims %+v", c)
	}
	h, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if want := `{"alg":"EdDSA","kid":"` + s.principal.DID().String() + `","typ":"JWT"}`; string(h) != want {
		t.Errorf("header %s, want %s", h, want)
	}
}

// TestVerifyChain has one case per reason a chain is refused, and the
// chains that verify.
func TestVerifyChain(t *testing.T) {
	s := newChainSetup(t)
	exp := t0.Add(10 * time.Minute)
	root := scopeAt("finance:pay", "ap2://rails/stripe/**", 100, 1000, 2, 600)
	narrow := scopeAt("finance:pay:escrow", "ap2://rails/stripe/invoices/**", 50, 500, 1, 300)
	p := s.issue(t, s.principal, s.a, s.device, exp, root)
	good := s.issue(t, s.a, s.b, s.device, exp, narrow)
	tampered := func(tok string) string {
		parts := strings.Split(tok, ".")
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		sig[0] ^= 1
		return parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
	sameDepth := narrow
	d := 2
	sameDepth.Depth = &d
	wrongVersion := narrow
	wrongVersion.V = "lap-scope-v9"
	cases := []struct {
		name  string
		chain []string
		at    time.Time
		want  error
	}{
		{"principal to A", []string{p}, t0, nil},
		{"principal to A to B", []string{p, good}, t0, nil},
		{"bad signature", []string{p, tampered(good)}, t0, ErrBadSignature},
		{"wrong audience", []string{p, s.issue(t, s.a, s.b, "did:web:elsewhere", exp, narrow)}, t0, ErrWrongAudience},
		{"expired at exp", []string{p, good}, exp, ErrExpired},
		{"broken chain", []string{p, s.issue(t, s.b, s.b, s.device, exp, narrow)}, t0, ErrBrokenChain},
		{"widened child cap", []string{p, s.issue(t, s.a, s.b, s.device, exp, scopeAt("finance:pay", "ap2://rails/stripe/**", 200, 1000, 1, 300))}, t0, ErrWidened},
		{"depth not dropped", []string{p, s.issue(t, s.a, s.b, s.device, exp, sameDepth)}, t0, ErrWidened},
		{"empty chain", nil, t0, ErrBrokenChain},
		{"not a JWS", []string{"a.b"}, t0, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := RegistryV0().VerifyChain(c.chain, s.device, clocktest.New(c.at))
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
	// An unknown version cannot be issued, and one signed anyway is refused.
	if _, err := Issue(s.a, Claims{Iss: s.a.DID().String(), Sub: s.b.DID().String(), Aud: s.device,
		Iat: t0.Unix(), Exp: exp.Unix(), Envelope: []Scope{wrongVersion}}); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("issue with unknown version: err = %v", err)
	}
	forged := signRaw(t, s.a, `{"aud":"`+s.device+`","envelope":[{"act":"finance:pay","res":"ap2://rails/stripe/x","v":"lap-scope-v9"}],"exp":`+
		itoa(exp.Unix())+`,"iat":`+itoa(t0.Unix())+`,"iss":"`+s.a.DID().String()+`","sub":"`+s.b.DID().String()+`"}`)
	if _, err := RegistryV0().VerifyChain([]string{p, forged}, s.device, clocktest.New(t0)); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("verify with unknown version: err = %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// signRaw signs claims text as a passport without Issue's checks.
func signRaw(t *testing.T, k *did.PrivateKey, claims string) string {
	t.Helper()
	h := `{"alg":"EdDSA","kid":"` + k.DID().String() + `"}`
	in := base64.RawURLEncoding.EncodeToString([]byte(h)) + "." + base64.RawURLEncoding.EncodeToString([]byte(claims))
	return in + "." + base64.RawURLEncoding.EncodeToString(k.Sign([]byte(in)))
}
