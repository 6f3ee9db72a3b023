package bearer

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
)

// Test identities of the Atom vectors: RFC 8032 seeds 31×00‖01 and 31×00‖02.
const (
	aliceDID = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
	// goldenToken was computed independently of this package with Python's
	// cryptography library: Alice's key signing the reference's example
	// claims {"aud":"https://peer.example","did":<alice>,"exp":1768478700,
	// "iat":1768478400,"v":1}.
	goldenToken = "atom.eyJhdWQiOiJodHRwczovL3BlZXIuZXhhbXBsZSIsImRpZCI6ImRpZDprZXk6ejZNa2pjaGhmVXNENm1tdm5pOG1DZFhIdzIxNlhybTliUWUybUJIMVA1UkRqVkpHIiwiZXhwIjoxNzY4NDc4NzAwLCJpYXQiOjE3Njg0Nzg0MDAsInYiOjF9.fTHY3e-rKq6apgvOcRgtB7a5CZhz9By4FnwHJM1etY-HvucCYx_XKKhEu1ibnp0HWUjeeMm6UrMFpNqjx-JdBA"
)

var noon = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC) // 1768478400

func TestIssueGolden(t *testing.T) {
	tok, err := Issue(didtest.Key(t, 1), "https://Peer.Example:443/a2a/jsonrpc", noon.Add(900*time.Millisecond), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if tok != goldenToken {
		t.Errorf("Issue = %s\nwant   %s", tok, goldenToken)
	}
}

func TestVerifyGolden(t *testing.T) {
	v := &Verifier{Audience: "https://peer.example/a2a/jsonrpc", Clock: clocktest.New(noon)}
	for _, in := range []string{goldenToken, "Bearer " + goldenToken, "bearer  " + goldenToken + " "} {
		id, err := v.Verify(in)
		if err != nil {
			t.Fatalf("Verify(%.20q…) = %v", in, err)
		}
		if id.String() != aliceDID {
			t.Errorf("Verify(%.20q…) = %v, want %v", in, id, aliceDID)
		}
	}
}

// signed builds a token over arbitrary claim bytes with k.
func signed(k *did.PrivateKey, body string) string {
	return Prefix + base64.RawURLEncoding.EncodeToString([]byte(body)) + "." + base64.RawURLEncoding.EncodeToString(k.Sign([]byte(body)))
}

func claims(aud string, iat, exp int64) string {
	c := Claims{V: 1, DID: aliceDID, Aud: aud, Iat: iat, Exp: exp}
	b, err := c.canonical()
	if err != nil {
		panic(err)
	}
	return string(b)
}

// verifyCase is a token and what Verify makes of it.
type verifyCase struct {
	name   string
	verif  Verifier
	in     string
	want   error  // nil: accepted
	detail string // reference detail when rejected
}

// aud is the audience of the tokens of verifyCases.
const aud = "https://peer.example"

// acceptedCases returns tokens by alice that Verify accepts; good is a
// token's claims, valid for five minutes from now.
func acceptedCases(alice *did.PrivateKey, good string, now int64) []verifyCase {
	return []verifyCase{
		{"valid", Verifier{}, signed(alice, good), nil, ""},
		{"padded parts", Verifier{}, signed(alice, good) + "==", nil, ""},
		{"exp equals now", Verifier{}, signed(alice, claims(aud, now-300, now)), nil, ""},
		{"iat at skew limit", Verifier{}, signed(alice, claims(aud, now+60, now+300)), nil, ""},
		{"lifetime at cap", Verifier{}, signed(alice, claims(aud, now, now+600)), nil, ""},
		{"lifetime cap off", Verifier{MaxLifetime: -1}, signed(alice, claims(aud, now, now+86400)), nil, ""},
		{"larger skew", Verifier{Skew: 5 * time.Minute}, signed(alice, claims(aud, now+200, now+300)), nil, ""},
		{"audience default port and path", Verifier{Audience: "HTTPS://PEER.EXAMPLE:443/a2a/jsonrpc"}, signed(alice, good), nil, ""},
		{"aud not normalised in claims", Verifier{}, signed(alice, claims("https://peer.example/", now, now+300)), nil, ""},
	}
}

// rejectedCases returns tokens Verify rejects, with the error and its
// reference detail.
func rejectedCases(alice, bob *did.PrivateKey, good string, now int64) []verifyCase {
	flipped := []byte(signed(alice, good))
	if flipped[len(flipped)-5] == 'A' {
		flipped[len(flipped)-5] = 'B'
	} else {
		flipped[len(flipped)-5] = 'A'
	}
	return []verifyCase{
		{"empty", Verifier{}, "", ErrMissing, "missing bearer token"},
		{"other scheme", Verifier{}, "Basic YWxpY2U6c2VjcmV0", ErrMissing, "missing bearer token"},
		{"bearer without token", Verifier{}, "Bearer ", ErrMissing, "missing bearer token"},
		{"no prefix", Verifier{}, "jwt.abc.def", ErrMalformed, "transport token: missing atom. prefix"},
		{"one part", Verifier{}, "atom.abc", ErrMalformed, "transport token: malformed"},
		{"empty body", Verifier{}, "atom..abc", ErrMalformed, "transport token: malformed"},
		{"empty signature", Verifier{}, "atom.abc.", ErrMalformed, "transport token: malformed"},
		{"not base64url", Verifier{}, "atom.a+b/c.def", ErrMalformed, "transport token: malformed"},
		{"not JSON", Verifier{}, signed(alice, "hello"), ErrMalformed, "transport token: payload is not JSON"},
		{"JSON array", Verifier{}, signed(alice, "[1]"), ErrMalformed, "transport token: payload is not JSON"},
		{"JSON null", Verifier{}, signed(alice, "null"), ErrMalformed, "transport token: payload is not JSON"},
		{"v 2", Verifier{}, signed(alice, strings.Replace(good, `"v":1`, `"v":2`, 1)), ErrMalformed, "transport token: invalid claims"},
		{"v string", Verifier{}, signed(alice, strings.Replace(good, `"v":1`, `"v":"1"`, 1)), ErrMalformed, "transport token: invalid claims"},
		{"did:web", Verifier{}, signed(alice, strings.Replace(good, aliceDID, "did:web:example.com", 1)), ErrMalformed, "transport token: invalid claims"},
		{"aud number", Verifier{}, signed(alice, strings.Replace(good, `"https://peer.example"`, `7`, 1)), ErrMalformed, "transport token: invalid claims"},
		{"iat fractional", Verifier{}, signed(alice, strings.Replace(good, `"iat":1768478400`, `"iat":1768478400.5`, 1)), ErrMalformed, "transport token: invalid claims"},
		{"exp missing", Verifier{}, signed(alice, `{"aud":"https://peer.example","did":"`+aliceDID+`","iat":1768478400,"v":1}`), ErrMalformed, "transport token: invalid claims"},
		{"expired", Verifier{}, signed(alice, claims(aud, now-301, now-1)), ErrExpired, "transport token: expired"},
		{"not yet valid", Verifier{}, signed(alice, claims(aud, now+61, now+300)), ErrNotYetValid, "transport token: not yet valid"},
		{"lifetime over cap", Verifier{}, signed(alice, claims(aud, now, now+601)), ErrLifetime, "transport token: lifetime too long"},
		{"lifetime overflows int64", Verifier{}, signed(alice, claims(aud, -4_700_000_000_000_000_000, 4_700_000_000_000_000_000)), ErrLifetime, "transport token: lifetime too long"},
		{"exp before iat in skew", Verifier{}, signed(alice, claims(aud, now+60, now+30)), ErrLifetime, "transport token: exp before iat"},
		{"lifetime custom cap", Verifier{MaxLifetime: time.Minute}, signed(alice, good), ErrLifetime, "transport token: lifetime too long"},
		{"other host", Verifier{Audience: "https://other.example"}, signed(alice, good), ErrAudience, "transport token: audience mismatch"},
		{"other scheme", Verifier{Audience: "http://peer.example"}, signed(alice, good), ErrAudience, "transport token: audience mismatch"},
		{"other port", Verifier{Audience: "https://peer.example:8443"}, signed(alice, good), ErrAudience, "transport token: audience mismatch"},
		{"no audience configured", Verifier{Audience: " "}, signed(alice, good), ErrAudience, "transport auth audience not configured"},
		{"whitespace", Verifier{}, signed(alice, strings.Replace(good, `,"v"`, `, "v"`, 1)), ErrNonCanonical, "transport token: non-canonical payload"},
		{"key order", Verifier{}, signed(alice, `{"v":1,"aud":"https://peer.example","did":"`+aliceDID+`","exp":1768478700,"iat":1768478400}`), ErrNonCanonical, "transport token: non-canonical payload"},
		{"extra claim", Verifier{}, signed(alice, strings.Replace(good, `"v":1`, `"v":1,"x":0`, 1)), ErrNonCanonical, "transport token: non-canonical payload"},
		{"signed by bob", Verifier{}, signed(bob, good), ErrSignature, "transport token: bad signature"},
		{"signature bit flipped", Verifier{}, string(flipped), ErrSignature, "transport token: bad signature"},
	}
}

func TestVerify(t *testing.T) {
	alice, bob := didtest.Key(t, 1), didtest.Key(t, 2)
	now := noon.Unix()
	good := claims(aud, now, now+300)
	for _, tt := range append(acceptedCases(alice, good, now), rejectedCases(alice, bob, good, now)...) {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.verif
			v.Clock = clocktest.New(noon)
			if v.Audience == "" {
				v.Audience = aud
			}
			id, err := v.Verify(tt.in)
			if tt.want == nil {
				if err != nil || id.String() != aliceDID {
					t.Fatalf("Verify = %v, %v; want %s", id, err, aliceDID)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, %v; want error wrapping %v", id, err, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Detail != tt.detail {
				t.Errorf("Verify error detail = %q, want %q", e.Detail, tt.detail)
			}
		})
	}
}

func TestIssueVerifyRoundTrip(t *testing.T) {
	k := didtest.Key(t, 2)
	clk := clocktest.New(noon)
	v := &Verifier{Audience: "http://127.0.0.1:8080", Clock: clk}
	tok, err := Issue(k, "http://127.0.0.1:8080/a2a/jsonrpc", clk.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := v.Verify(Authorization(tok)); err != nil || id != k.DID() {
		t.Fatalf("Verify(fresh) = %v, %v", id, err)
	}
	clk.Advance(DefaultTTL)
	if _, err := v.Verify(tok); err != nil {
		t.Fatalf("Verify at exp = %v, want valid", err)
	}
	clk.Advance(time.Second)
	if _, err := v.Verify(tok); !errors.Is(err, ErrExpired) {
		t.Fatalf("Verify after exp = %v, want ErrExpired", err)
	}
	if _, err := Issue(k, "", noon, 0); err == nil {
		t.Error("Issue with empty audience succeeded")
	}
	if _, err := Issue(k, "https://a.example", noon, -time.Second); err == nil {
		t.Error("Issue with negative ttl succeeded")
	}
}

func TestNormalizeAudience(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://peer.example", "https://peer.example"},
		{"https://peer.example/", "https://peer.example"},
		{"https://Peer.EXAMPLE/a2a/jsonrpc?x=1#f", "https://peer.example"},
		{"HTTPS://peer.example:443", "https://peer.example"},
		{"http://peer.example:80/", "http://peer.example"},
		{"http://peer.example:443", "http://peer.example:443"},
		{"https://peer.example:8443/a2a", "https://peer.example:8443"},
		{"http://[::1]:8080/x", "http://[::1]:8080"},
		{"http://[::1]:80", "http://[::1]"},
		{"  https://peer.example  ", "https://peer.example"},
		{"peer.example/", "peer.example"}, // not a URL: the reference's fallback
	}
	for _, tt := range tests {
		got, err := NormalizeAudience(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeAudience(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := NormalizeAudience(" "); err == nil {
		t.Error("NormalizeAudience(blank) succeeded")
	}
}

// TestPurpose: a link token (IssueLink) opens only the device link, and an
// A2A token (Issue, the reference's format) only the A2A endpoints.
func TestPurpose(t *testing.T) {
	clk := clocktest.New(noon)
	alice := didtest.Key(t, 1)
	a2a := &Verifier{Audience: aud, Clock: clk}
	lnk := &Verifier{Audience: aud, Clock: clk, Purpose: PurposeLink}
	plain, err := Issue(alice, aud, noon, 0)
	if err != nil {
		t.Fatal(err)
	}
	linkTok, err := IssueLink(alice, aud, noon, 0)
	if err != nil {
		t.Fatal(err)
	}
	other := signed(alice, mustCanon(t, Claims{V: 1, DID: aliceDID, Aud: aud, Iat: noon.Unix(), Exp: noon.Unix() + 60, Purpose: "other"}))
	for _, tt := range []struct {
		name string
		v    *Verifier
		tok  string
		want error
	}{
		{"A2A token at A2A", a2a, plain, nil},
		{"link token at link", lnk, linkTok, nil},
		{"link token at A2A", a2a, linkTok, ErrPurpose},
		{"A2A token at link", lnk, plain, ErrPurpose},
		{"other purpose at link", lnk, other, ErrPurpose},
		{"other purpose at A2A", a2a, other, ErrPurpose},
		{"empty purpose claim", lnk, signed(alice, `{"aud":"`+aud+`","did":"`+aliceDID+`","exp":1768478460,"iat":1768478400,"purpose":"","v":1}`), ErrMalformed},
		{"numeric jti", lnk, signed(alice, `{"aud":"`+aud+`","did":"`+aliceDID+`","exp":1768478460,"iat":1768478400,"jti":5,"purpose":"torpor-link","v":1}`), ErrMalformed},
	} {
		_, err := tt.v.Verify(tt.tok)
		if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: Verify = %v, want %v", tt.name, err, tt.want)
		}
	}
	again, err := IssueLink(alice, aud, noon, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again == linkTok {
		t.Error("two link tokens issued in the same second are equal; the relay would refuse the second as a replay")
	}
	_, err = a2a.Verify(linkTok)
	var e *Error
	if !errors.As(err, &e) || e.Detail != "transport token: wrong purpose" || strings.Contains(e.Error(), linkTok) {
		t.Errorf("link token at A2A: %v; want detail %q and no token in the error", err, "transport token: wrong purpose")
	}
}

func mustCanon(tb testing.TB, c Claims) string {
	tb.Helper()
	b, err := c.canonical()
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
