package bearer

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
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

// TestSigCacheRechecksVerifier: a token cached by one Verifier is refused
// by another of the same cache whose audience or purpose differs, and a
// caller changing the token it got changes nothing the cache holds.
func TestSigCacheRechecksVerifier(t *testing.T) {
	k := didtest.Key(t, 3)
	clk := clocktest.New(noon)
	cache := NewSigCache(8)
	v := &Verifier{Audience: aud, Clock: clk, Signatures: cache}
	tok, _ := Issue(k, aud, clk.Now(), 0)
	got, err := v.VerifyToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	got.Claims.Aud, got.Claims.Exp = "https://elsewhere.example", 0
	again, err := v.VerifyToken(tok)
	if err != nil || again.Claims.Aud != aud || again.DID() != k.DID() {
		t.Fatalf("cached token after the caller changed its copy: %+v, %v", again, err)
	}
	again.Claims.Purpose = PurposeLink
	other := &Verifier{Audience: "https://elsewhere.example", Clock: clk, Signatures: cache}
	if _, err := other.Verify(tok); !errors.Is(err, ErrAudience) {
		t.Errorf("cached token, other audience: %v, want ErrAudience", err)
	}
	link := &Verifier{Audience: aud, Clock: clk, Signatures: cache, Purpose: PurposeLink}
	if _, err := link.Verify(tok); !errors.Is(err, ErrPurpose) {
		t.Errorf("cached token, link purpose: %v, want ErrPurpose", err)
	}
	if _, err := v.Verify(tok); err != nil {
		t.Errorf("cached token, its own verifier again: %v", err)
	}
}

// BenchmarkVerifyCached verifies one token over and over, as the relay
// does for a sender's requests, with and without the cache.
func BenchmarkVerifyCached(b *testing.B) {
	k := didtest.Key(b, 4)
	clk := clocktest.New(noon)
	tok, _ := Issue(k, aud, clk.Now(), 0)
	for _, cache := range []*SigCache{nil, NewSigCache(8)} {
		v := &Verifier{Audience: aud, Clock: clk, Signatures: cache}
		b.Run(fmt.Sprintf("cache=%v", cache != nil), func(b *testing.B) {
			meter := benchcpu.Start(b)
			for b.Loop() {
				if _, err := v.Verify(Authorization(tok)); err != nil {
					b.Fatal(err)
				}
			}
			meter.Stop()
		})
	}
}
