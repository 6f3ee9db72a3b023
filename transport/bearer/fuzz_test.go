package bearer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/torpor-dev/torpor/clock/clocktest"
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
