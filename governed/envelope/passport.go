package envelope

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/jcs"
)

// A passport is the envelope's carrier: a JWS in the compact serialization
// (RFC 7515, Section 3.1; Section 7.1), signed with alg EdDSA over Ed25519
// (RFC 8037, Section 3.1), whose protected header names the issuer's did:key
// as kid and whose payload is the Claims in RFC 8785 canonical JSON.

// Alg is the only JWS algorithm a passport uses (RFC 8037, Section 3.1).
const Alg = "EdDSA"

// Claims are a passport's claims (RFC 7519, Section 4.1 for iss, sub, aud,
// exp, iat) and the envelope it grants.
type Claims struct {
	// Iss is the principal (or, in a delegation, the delegating agent).
	Iss string `json:"iss"`
	// Sub is the agent's key the envelope is granted to.
	Sub string `json:"sub"`
	// Aud is the receiving agent.
	Aud string `json:"aud"`
	// Exp and Iat are NumericDates (RFC 7519, Section 2): seconds since
	// the Unix epoch, UTC.
	Exp      int64   `json:"exp"`
	Iat      int64   `json:"iat"`
	Envelope []Scope `json:"envelope"`
}

// header is the JWS protected header (RFC 7515, Section 4.1).
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ,omitempty"`
}

// The reasons a passport or a chain of them is refused, besides
// ErrUnknownVersion, ErrMalformed and ErrWidened.
var (
	ErrBadSignature  = errors.New("envelope: bad passport signature")
	ErrWrongAudience = errors.New("envelope: passport for another audience")
	ErrExpired       = errors.New("envelope: passport expired")
	ErrBrokenChain   = errors.New("envelope: broken delegation chain")
)

var b64 = base64.RawURLEncoding.Strict()

// Issue signs c with key as a passport. c.Iss must be key's DID and the
// envelope must validate.
func Issue(key *did.PrivateKey, c Claims) (string, error) {
	if c.Iss != key.DID().String() {
		return "", fmt.Errorf("%w: iss %q is not the signing key %s", ErrMalformed, c.Iss, key.DID())
	}
	if err := c.validate(); err != nil {
		return "", err
	}
	h, err := canonical(header{Alg: Alg, Kid: c.Iss, Typ: "JWT"})
	if err != nil {
		return "", err
	}
	p, err := canonical(c)
	if err != nil {
		return "", err
	}
	// The signing input is ASCII(BASE64URL(header) '.' BASE64URL(payload))
	// (RFC 7515, Section 5.1, step 5).
	in := b64.EncodeToString(h) + "." + b64.EncodeToString(p)
	return in + "." + b64.EncodeToString(key.Sign([]byte(in))), nil
}

func canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

func (c Claims) validate() error {
	if _, err := did.Parse(c.Iss); err != nil {
		return fmt.Errorf("%w: iss: %w", ErrMalformed, err)
	}
	if _, err := did.Parse(c.Sub); err != nil {
		return fmt.Errorf("%w: sub: %w", ErrMalformed, err)
	}
	if c.Exp <= c.Iat {
		return fmt.Errorf("%w: exp %d is not after iat %d", ErrMalformed, c.Exp, c.Iat)
	}
	if c.Aud == "" || len(c.Envelope) == 0 {
		return fmt.Errorf("%w: a passport names its audience and grants at least one scope", ErrMalformed)
	}
	for i, s := range c.Envelope {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("scope %d: %w", i, err)
		}
	}
	return nil
}

// Verify checks one passport for audience aud at the clock's time: its
// compact form, header (alg EdDSA, kid the did:key that is iss), signature
// (RFC 7515, Section 5.2), claims (read strictly, envelope of a known
// version), audience and expiry (RFC 7519, Section 4.1.4: refused at or
// after exp). A nil clock means clock.Real.
func Verify(token, aud string, clk clock.Clock) (Claims, error) {
	c, err := verifySignature(token)
	if err != nil {
		return Claims{}, err
	}
	if c.Aud != aud {
		return Claims{}, fmt.Errorf("%w: aud %q, this agent is %q", ErrWrongAudience, c.Aud, aud)
	}
	if now := clock.Or(clk).Now().Unix(); now >= c.Exp {
		return Claims{}, fmt.Errorf("%w: exp %d, now %d", ErrExpired, c.Exp, now)
	}
	return c, nil
}

func verifySignature(token string) (Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Claims{}, fmt.Errorf("%w: not a compact JWS (%d parts)", ErrMalformed, len(parts))
	}
	var raw [3][]byte
	for i, p := range parts {
		b, err := b64.DecodeString(p)
		if err != nil {
			return Claims{}, fmt.Errorf("%w: part %d: %w", ErrMalformed, i, err)
		}
		raw[i] = b
	}
	var h header
	if err := decodeStrict(raw[0], &h); err != nil {
		return Claims{}, fmt.Errorf("header: %w", err)
	}
	if h.Alg != Alg {
		return Claims{}, fmt.Errorf("%w: alg %q, want %s", ErrBadSignature, h.Alg, Alg)
	}
	kid, err := did.Parse(h.Kid)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: kid: %w", ErrMalformed, err)
	}
	if !kid.Verify([]byte(parts[0]+"."+parts[1]), raw[2]) {
		return Claims{}, fmt.Errorf("%w: kid %s", ErrBadSignature, kid)
	}
	var c Claims
	if err := decodeStrict(raw[1], &c); err != nil {
		return Claims{}, fmt.Errorf("claims: %w", err)
	}
	if c.Iss != h.Kid {
		return Claims{}, fmt.Errorf("%w: iss %q is not kid %q", ErrBadSignature, c.Iss, h.Kid)
	}
	return c, c.validate()
}

// VerifyChain checks a delegation chain, root first: the principal's
// passport for the first agent, then each agent's passport for its
// delegate. Every passport must verify for aud at the clock's time (the
// whole chain authorizes actions at one receiver), each child's iss must be
// its parent's sub (ErrBrokenChain), and each child's envelope must be
// covered by its parent's under r (CoversEnvelope: action, resource, cap,
// counterparties, decay, depth dropping by at least one, budget conserved;
// ErrWidened). It returns the claims of each passport; the principal is the
// first one's Iss, which the caller must trust, and the holder the last
// one's Sub. Errors name the passport's index in the chain.
func (r Registry) VerifyChain(chain []string, aud string, clk clock.Clock) ([]Claims, error) {
	if len(chain) == 0 {
		return nil, fmt.Errorf("%w: no passport", ErrBrokenChain)
	}
	out := make([]Claims, 0, len(chain))
	for i, tok := range chain {
		c, err := Verify(tok, aud, clk)
		if err != nil {
			return nil, fmt.Errorf("passport %d: %w", i, err)
		}
		if i > 0 {
			parent := out[i-1]
			if c.Iss != parent.Sub {
				return nil, fmt.Errorf("passport %d: %w: iss %s is not its parent's sub %s", i, ErrBrokenChain, c.Iss, parent.Sub)
			}
			if err := r.CoversEnvelope(parent.Envelope, c.Envelope); err != nil {
				return nil, fmt.Errorf("passport %d: %w", i, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}
