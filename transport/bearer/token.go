package bearer

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/canon"
)

const (
	// Prefix starts every token.
	Prefix = "atom."
	// Scheme is the name of the security scheme on the Agent Card.
	Scheme = "atomDidBearer"
	// Format is the bearerFormat of that scheme.
	Format = "AtomDID"

	// DefaultTTL is the lifetime Issue gives a token when ttl is zero; the
	// reference uses the same.
	DefaultTTL = 5 * time.Minute
	// DefaultMaxLifetime caps exp − iat when Verifier.MaxLifetime is zero.
	DefaultMaxLifetime = 10 * time.Minute
	// DefaultSkew is the allowance for a caller whose clock runs ahead when
	// Verifier.Skew is zero.
	DefaultSkew = 60 * time.Second

	// PurposeLink is the purpose claim of a device link token (IssueLink):
	// such a token opens the device link and nothing else.
	PurposeLink = "torpor-link"
)

// Claims are the signed contents of a token.
type Claims struct {
	V   int    `json:"v"`   // always 1
	DID string `json:"did"` // the caller
	Aud string `json:"aud"` // the callee's origin
	Iat int64  `json:"iat"` // issued at, Unix seconds
	Exp int64  `json:"exp"` // expires at, Unix seconds
	// Purpose restricts what the token may be used for. The reference's
	// tokens (A2A senders) have none; a device link token has PurposeLink.
	// A Verifier accepts a token only when its Purpose is the Verifier's.
	Purpose string `json:"purpose,omitempty"`
	// Jti makes a token unique (RFC 7519, Section 4.1.7, "jti"): link
	// tokens carry a random one, so that two links opened in the same
	// second have different tokens and the relay's single-use check
	// refuses only a replay.
	Jti string `json:"jti,omitempty"`
}

// canonical returns the canonical claim bytes: sorted keys, no whitespace,
// strings escaped as RFC 8785 (and JavaScript's JSON.stringify) escape them.
func (c Claims) canonical() ([]byte, error) {
	return canon.Marshal(c)
}

// Issue returns a token asserting key's DID to the origin of aud, issued at
// now and valid for ttl (DefaultTTL when zero). Times are truncated to whole
// seconds as the reference does. Send it as Authorization(token).
func Issue(key *did.PrivateKey, aud string, now time.Time, ttl time.Duration) (string, error) {
	return issue(key, aud, "", "", now, ttl)
}

// IssueLink returns a device link token: Issue's token with the purpose
// claim PurposeLink and a random jti of 16 bytes (base64url). It is
// refused by every Verifier whose Purpose is not PurposeLink, so it
// cannot be used to send as the device, and by a link Verifier it is
// accepted once (transport/link/server keeps the tokens it accepted).
func IssueLink(key *did.PrivateKey, aud string, now time.Time, ttl time.Duration) (string, error) {
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("bearer: %v", err)
	}
	return issue(key, aud, PurposeLink, base64.RawURLEncoding.EncodeToString(jti), now, ttl)
}

func issue(key *did.PrivateKey, aud, purpose, jti string, now time.Time, ttl time.Duration) (string, error) {
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < 0 {
		return "", fmt.Errorf("bearer: negative ttl %v", ttl)
	}
	origin, err := NormalizeAudience(aud)
	if err != nil {
		return "", err
	}
	c := Claims{
		V:   1,
		DID: key.DID().String(),
		Aud: origin,
		Iat: floorUnix(now),
		Exp: floorUnix(now.Add(ttl)),

		Purpose: purpose,
		Jti:     jti,
	}
	body, err := c.canonical()
	if err != nil {
		return "", fmt.Errorf("bearer: %v", err)
	}
	sig := key.Sign(body)
	return Prefix + base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// Authorization returns the Authorization header value carrying token.
func Authorization(token string) string { return "Bearer " + token }

func floorUnix(t time.Time) int64 {
	// Unix() truncates toward zero; floor matches Math.floor(ms/1000) for
	// the (theoretical) instants before 1970 too.
	s := t.Unix()
	if t.Before(time.Unix(s, 0)) {
		s--
	}
	return s
}

// Verifier checks tokens presented to one origin. Its zero value refuses
// every token (no audience); set Audience. Do not change it after use
// begins.
type Verifier struct {
	// Audience is this server's public base URL or origin, such as
	// "https://relay.example". It is compared after NormalizeAudience.
	Audience string
	// Clock tells the time; nil means clock.Real.
	Clock clock.Clock
	// MaxLifetime caps exp − iat; zero means DefaultMaxLifetime and a
	// negative value disables the cap (the reference's behaviour).
	MaxLifetime time.Duration
	// Skew is how far iat may lie in the future; zero means DefaultSkew.
	Skew time.Duration
	// Purpose is the only purpose claim accepted: empty (the A2A
	// endpoints) refuses every token that has one, PurposeLink (the device
	// link) every token that has another or none.
	Purpose string
	// Signatures, when set, remembers tokens whose signature verified (see
	// SigCache); nil verifies every signature.
	Signatures *SigCache
}

// Verify checks a token, given either as the bare token or as the full
// Authorization header value ("Bearer atom.…"), and returns the DID it
// proves. On failure it returns an *Error wrapping the sentinel of the
// failed check (see the package documentation for the order).
func (v *Verifier) Verify(s string) (did.DID, error) {
	t, _, err := v.verify(s)
	if err != nil {
		return did.DID{}, err
	}
	return t.id, nil
}

// VerifyToken is Verify, returning the verified token: its DID, its
// claims, and its one spelling (String), which is what a server that
// accepts a token only once keys on.
func (v *Verifier) VerifyToken(s string) (*Token, error) {
	t, cached, err := v.verify(s)
	if err != nil || !cached {
		return t, err
	}
	c := *t // the caller may change the one it gets
	return &c, nil
}

// verify is VerifyToken; cached is true when t is SigCache's, which must
// not change.
func (v *Verifier) verify(s string) (t *Token, cached bool, err error) {
	tok, err := extract(s)
	if err != nil {
		return nil, false, err
	}
	if e, ok := v.Signatures.get(tok); ok {
		if err := v.verifyCached(e); err != nil {
			return nil, false, err
		}
		return e.t, true, nil
	}
	t, err = Parse(tok)
	if err != nil {
		return nil, false, err
	}
	if err := v.checkVarying(t.Claims); err != nil {
		return nil, false, err
	}
	want, err := t.Claims.canonical()
	if err != nil || !bytes.Equal(want, t.body) {
		return nil, false, fail(ErrNonCanonical, "transport token: non-canonical payload", "")
	}
	if !t.id.Verify(t.body, t.sig) {
		return nil, false, fail(ErrSignature, "transport token: bad signature", "")
	}
	keep := *t // the caller may change the one it gets
	v.Signatures.add(tok, &keep, v.Audience)
	return t, false, nil
}

// verifyCached runs on a token SigCache holds the checks that depend on
// the time or on the Verifier (3–7), in their order.
func (v *Verifier) verifyCached(e cached) error {
	if err := v.checkTimes(e.t.Claims); err != nil {
		return err
	}
	if e.audience != v.Audience {
		if err := v.checkAudience(e.t.Claims.Aud); err != nil {
			return err
		}
	}
	return v.checkPurpose(e.t.Claims)
}

// checkVarying runs checks 3–7: the times, the audience and the purpose.
func (v *Verifier) checkVarying(c Claims) error {
	if err := v.checkTimes(c); err != nil {
		return err
	}
	if err := v.checkAudience(c.Aud); err != nil {
		return err
	}
	return v.checkPurpose(c)
}

func (v *Verifier) checkPurpose(c Claims) error {
	if c.Purpose != v.Purpose {
		return fail(ErrPurpose, "transport token: wrong purpose", purposeReason(c.Purpose, v.Purpose))
	}
	return nil
}

// Token is a decoded token whose signature, times and audience have not
// been checked. Only Verify establishes that a token is valid.
type Token struct {
	Claims Claims
	id     did.DID
	body   []byte // the claim bytes as received
	sig    []byte
}

// Parse decodes a bare token: the prefix, the two base64url parts and the
// claim types. It returns an *Error wrapping ErrMalformed on failure.
func Parse(tok string) (*Token, error) {
	body, sig, err := split(tok)
	if err != nil {
		return nil, err
	}
	c, id, err := parseClaims(body)
	if err != nil {
		return nil, err
	}
	return &Token{Claims: c, id: id, body: body, sig: sig}, nil
}

// DID returns the DID the token claims (proven only once Verify passed).
func (t *Token) DID() did.DID { return t.id }

// String re-encodes the token from the claim bytes and signature it was
// parsed from, without padding.
func (t *Token) String() string {
	return Prefix + base64.RawURLEncoding.EncodeToString(t.body) + "." + base64.RawURLEncoding.EncodeToString(t.sig)
}

// extract returns the token from a bare token or an Authorization value.
// The scheme name is matched case-insensitively (RFC 9110 Section 11.1).
func extract(s string) (string, error) {
	s = strings.TrimSpace(s)
	scheme, rest, ok := strings.Cut(s, " ")
	switch {
	case ok && strings.EqualFold(scheme, "Bearer"):
		s = strings.TrimSpace(rest)
	case ok || strings.EqualFold(s, "Bearer"):
		s = "" // another scheme, or no token after the scheme
	}
	if s == "" {
		return "", fail(ErrMissing, "missing bearer token", "")
	}
	return s, nil
}

func split(tok string) (body, sig []byte, err error) {
	rest, ok := strings.CutPrefix(tok, Prefix)
	if !ok {
		return nil, nil, fail(ErrMalformed, "transport token: missing atom. prefix", "")
	}
	b64body, b64sig, ok := strings.Cut(rest, ".")
	if !ok || b64body == "" || b64sig == "" {
		return nil, nil, fail(ErrMalformed, "transport token: malformed", "want atom.<claims>.<signature>")
	}
	body, err1 := decodeB64URL(b64body)
	sig, err2 := decodeB64URL(b64sig)
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, fail(ErrMalformed, "transport token: malformed", err.Error())
	}
	return body, sig, nil
}

// decodeB64URL decodes base64url with or without padding. Strict decoding
// refuses non-zero trailing bits, so a token has one spelling only.
func decodeB64URL(s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("not base64url: %v", err)
	}
	return b, nil
}

// parseClaims decodes the claim bytes and checks the claim types the way
// the reference does.
func parseClaims(body []byte) (Claims, did.DID, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return Claims{}, did.DID{}, fail(ErrMalformed, "transport token: payload is not JSON", "")
	}
	var c Claims
	var bad []string
	if v, ok := intClaim(raw["v"]); !ok || v != 1 {
		bad = append(bad, "v")
	}
	c.V = 1
	if !stringClaim(raw["did"], &c.DID) {
		bad = append(bad, "did")
	}
	if !stringClaim(raw["aud"], &c.Aud) {
		bad = append(bad, "aud")
	}
	var ok bool
	if c.Iat, ok = intClaim(raw["iat"]); !ok {
		bad = append(bad, "iat")
	}
	if c.Exp, ok = intClaim(raw["exp"]); !ok {
		bad = append(bad, "exp")
	}
	for _, m := range []struct {
		name string
		dst  *string
	}{{"purpose", &c.Purpose}, {"jti", &c.Jti}} {
		if raw[m.name] != nil && (!stringClaim(raw[m.name], m.dst) || *m.dst == "") {
			bad = append(bad, m.name)
		}
	}
	id, err := did.Parse(c.DID)
	if err != nil && !contains(bad, "did") {
		bad = append(bad, "did")
	}
	if len(bad) > 0 {
		return Claims{}, did.DID{}, fail(ErrMalformed, "transport token: invalid claims", "bad "+strings.Join(bad, ", "))
	}
	return c, id, nil
}

func contains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

func stringClaim(raw json.RawMessage, dst *string) bool {
	return raw != nil && json.Unmarshal(raw, dst) == nil && raw[0] == '"'
}

// intClaim decodes an integer JSON number. The reference accepts any JSON
// number; a fractional one could never be the canonical form of integer
// seconds anyway.
func intClaim(raw json.RawMessage) (int64, bool) {
	if raw == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

func (v *Verifier) checkTimes(c Claims) error {
	now := floorUnix(clock.Or(v.Clock).Now())
	if c.Exp < now {
		return fail(ErrExpired, "transport token: expired", fmt.Sprintf("exp %d < now %d", c.Exp, now))
	}
	skew := v.Skew
	if skew == 0 {
		skew = DefaultSkew
	}
	if c.Iat > now+int64(skew/time.Second) {
		return fail(ErrNotYetValid, "transport token: not yet valid", fmt.Sprintf("iat %d > now %d + %v", c.Iat, now, skew))
	}
	max := v.MaxLifetime
	if max == 0 {
		max = DefaultMaxLifetime
	}
	if c.Exp < c.Iat {
		return fail(ErrLifetime, "transport token: exp before iat", fmt.Sprintf("exp %d < iat %d", c.Exp, c.Iat))
	}
	// exp − iat can overflow int64 (iat far in the past, exp far in the
	// future), so compare iat against exp − max instead: exp ≥ now here and
	// max is at most a Duration's seconds, so exp − max cannot wrap.
	if max > 0 && c.Iat < c.Exp-int64(max/time.Second) {
		return fail(ErrLifetime, "transport token: lifetime too long", fmt.Sprintf("iat %d, exp %d: lifetime over %v", c.Iat, c.Exp, max))
	}
	return nil
}

func (v *Verifier) checkAudience(aud string) error {
	mine, err := NormalizeAudience(v.Audience)
	if err != nil || v.Audience == "" {
		return fail(ErrAudience, "transport auth audience not configured", "")
	}
	got, err := NormalizeAudience(aud)
	if err != nil || got != mine {
		return fail(ErrAudience, "transport token: audience mismatch", fmt.Sprintf("token for %q, this is %q", truncate(aud), mine))
	}
	return nil
}

func purposeReason(got, want string) string {
	name := func(p string) string {
		if p == "" {
			return "none"
		}
		return strconv.Quote(truncate(p))
	}
	return "token purpose " + name(got) + ", this endpoint takes " + name(want)
}

func truncate(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// NormalizeAudience reduces a URL to the origin scheme://host[:port] the
// token's aud claim names: scheme and host lower-cased, the scheme's default
// port (80 for http, 443 for https) dropped, path, query and fragment
// removed. This is what the reference gets from the WHATWG URL parser. A
// string that is not an absolute URL with a host is returned trimmed of
// white space and one trailing slash, as the reference's fallback does.
func NormalizeAudience(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("bearer: empty audience")
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return strings.TrimSuffix(s, "/"), nil
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 literal
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(strings.Trim(host, "[]"), port)
	}
	return scheme + "://" + host, nil
}
