package bearer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did/didtest"
)

// TestVerifyWithSigCache runs every accepted and rejected case of
// TestVerify twice through one shared cache: the answers do not change.
func TestVerifyWithSigCache(t *testing.T) {
	alice, bob := didtest.Key(t, 1), didtest.Key(t, 2)
	now := noon.Unix()
	good := claims(aud, now, now+300)
	cache := NewSigCache(64)
	cases := append(acceptedCases(alice, good, now), rejectedCases(alice, bob, good, now)...)
	for round := range 2 {
		for _, tt := range cases {
			v := tt.verif
			v.Clock, v.Signatures = clocktest.New(noon), cache
			if v.Audience == "" {
				v.Audience = aud
			}
			_, err := v.Verify(tt.in)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("round %d, %s: Verify = %v, want %v", round, tt.name, err, tt.want)
			}
		}
	}
}

func TestSigCache(t *testing.T) {
	k := didtest.Key(t, 2)
	clk := clocktest.New(noon)
	v := &Verifier{Audience: aud, Clock: clk, Signatures: NewSigCache(2)}
	tok, err := Issue(k, aud, clk.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(tok); err != nil || !v.Signatures.has(tok) {
		t.Fatalf("Verify = %v, cached %v; want valid and cached", err, v.Signatures.has(tok))
	}
	// Another signature over the same claims is not the cached token.
	body, _, _ := strings.Cut(strings.TrimPrefix(tok, Prefix), ".")
	forged := Prefix + body + "." + strings.Repeat("A", 86)
	if _, err := v.Verify(forged); !errors.Is(err, ErrSignature) || v.Signatures.has(forged) {
		t.Errorf("forged signature: %v, cached %v", err, v.Signatures.has(forged))
	}
	clk.Advance(DefaultTTL + time.Second)
	if _, err := v.Verify(tok); !errors.Is(err, ErrExpired) {
		t.Errorf("cached token after exp: %v, want ErrExpired", err)
	}
	for i := range 5 {
		tok, _ := Issue(k, aud, clk.Now().Add(time.Duration(i)*time.Second), 0)
		if _, err := v.Verify(tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(v.Signatures.ok); n != 2 {
		t.Errorf("cache holds %d tokens, want its size 2", n)
	}
}
