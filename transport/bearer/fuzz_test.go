package bearer

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did/didtest"
)

// FuzzParse checks parse → re-encode → parse: a token that parses
// re-encodes to a token with the same claims, and a token in the form Issue
// writes re-encodes to itself. Verify must never panic and never accept a
// token whose claim bytes are not canonical.
func FuzzParse(f *testing.F) {
	f.Add(goldenToken)
	f.Add("Bearer " + goldenToken)
	f.Add("atom.e30.AA")
	f.Add("atom.bnVsbA.AA")
	f.Add("atom..")
	f.Fuzz(func(t *testing.T, s string) {
		v := &Verifier{Audience: "https://peer.example", Clock: clocktest.New(noon)}
		if id, err := v.Verify(s); err == nil {
			tok, _ := extract(s)
			p, err := Parse(tok)
			if err != nil {
				t.Fatalf("Verify accepted what Parse rejects: %v", err)
			}
			if want, _ := p.Claims.canonical(); string(want) != string(p.body) || p.id != id {
				t.Fatalf("Verify accepted non-canonical claims %q", p.body)
			}
		}
		p, err := Parse(s)
		if err != nil {
			return
		}
		s2 := p.String()
		p2, err := Parse(s2)
		if err != nil {
			t.Fatalf("Parse(%q) = %v after re-encoding %q", s2, err, s)
		}
		if diff := cmp.Diff(p.Claims, p2.Claims); diff != "" {
			t.Fatalf("claims changed on re-encoding (-first +second):\n%s", diff)
		}
		if p2.String() != s2 {
			t.Fatalf("re-encoding is not stable: %q then %q", s2, p2.String())
		}
	})
}

// FuzzClaimTimes signs claims with any iat and exp, extreme integers
// included, and checks Verify against the rules computed in big integers, so
// that no int64 arithmetic in the check can wrap: accepted exactly when
// exp ≥ now, iat ≤ now + skew, iat ≤ exp and exp − iat ≤ the cap.
func FuzzClaimTimes(f *testing.F) {
	now := noon.Unix()
	f.Add(now, now+300)
	f.Add(int64(-4_700_000_000_000_000_000), int64(4_700_000_000_000_000_000))
	f.Add(int64(math.MinInt64), int64(math.MaxInt64))
	f.Add(now+60, now+30)
	f.Add(now-600, now)
	alice := didtest.Key(f, 1)
	f.Fuzz(func(t *testing.T, iat, exp int64) {
		c := Claims{V: 1, DID: aliceDID, Aud: "https://peer.example", Iat: iat, Exp: exp}
		body, err := c.canonical()
		if err != nil {
			return
		}
		v := &Verifier{Audience: "https://peer.example", Clock: clocktest.New(noon)}
		_, err = v.Verify(signed(alice, string(body)))
		p, perr := Parse(signed(alice, string(body)))
		if perr != nil {
			if err == nil {
				t.Fatalf("Verify accepted claims Parse refuses: %s", body)
			}
			return // JCS wrote a number that is not an exact integer
		}
		I, E := big.NewInt(p.Claims.Iat), big.NewInt(p.Claims.Exp)
		life := new(big.Int).Sub(E, I)
		want := E.Cmp(big.NewInt(now)) >= 0 &&
			I.Cmp(big.NewInt(now+int64(DefaultSkew/time.Second))) <= 0 &&
			life.Sign() >= 0 &&
			life.Cmp(big.NewInt(int64(DefaultMaxLifetime/time.Second))) <= 0
		if (err == nil) != want {
			t.Fatalf("Verify(iat %d, exp %d) = %v; want accepted %v", p.Claims.Iat, p.Claims.Exp, err, want)
		}
	})
}
