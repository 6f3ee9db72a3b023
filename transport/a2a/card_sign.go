package a2a

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/canon"
)

// Card signatures follow A2A v1.0 Section 8.4: a JWS (RFC 7515) with a
// detached payload (RFC 7515 Appendix F) in JSON serialisation, whose payload
// is the RFC 8785 canonical form of the card without its "signatures"
// member. The algorithm is EdDSA with Ed25519 (RFC 8037 Section 3.1) and kid
// is the agent's did:key, so that a relying party can check that the card was
// signed by the agent it names (draft-chapman-a2a-mls-03, Agent Card) without
// resolving anything: the key is derived from the DID.
//
// A relay serves the card its device signed, byte for byte, and cannot forge
// one: it holds no agent key.

// CardSignature is one JWS signature of a card in flattened JSON form.
type CardSignature struct {
	// Protected is the base64url (no padding) of the protected header
	// {"alg":"EdDSA","kid":<did:key>,"typ":"JOSE"}.
	Protected string `json:"protected"`
	// Signature is the base64url (no padding) Ed25519 signature.
	Signature string `json:"signature"`
	// Header is the unprotected header; Torpor sets none.
	Header json.RawMessage `json:"header,omitempty"`
}

type jwsHeader struct {
	Alg  string   `json:"alg"`
	Kid  string   `json:"kid"`
	Typ  string   `json:"typ,omitempty"`
	Crit []string `json:"crit,omitempty"`
}

// Card verification errors, each returned wrapped in a *CardError.
var (
	// ErrCardMalformed is returned when the card is not a JSON object in
	// I-JSON form, or its signatures member is not a list of JWS objects.
	ErrCardMalformed = errors.New("a2a: malformed agent card")
	// ErrCardUnsigned is returned when the card has no signature whose kid
	// is the expected agent DID.
	ErrCardUnsigned = errors.New("a2a: agent card not signed by the agent")
	// ErrCardSignature is returned when a signature by the agent's kid does
	// not verify, or uses another algorithm than EdDSA.
	ErrCardSignature = errors.New("a2a: agent card signature invalid")
)

// CardError is a failed card verification or extension check.
type CardError struct {
	// Reason is a short machine-readable reason, such as "malformed".
	Reason string
	// Err is the sentinel or underlying error.
	Err error
}

func (e *CardError) Error() string { return fmt.Sprintf("a2a: agent card %s: %v", e.Reason, e.Err) }

// Unwrap returns the underlying error.
func (e *CardError) Unwrap() error { return e.Err }

var b64url = base64.RawURLEncoding

// SignCard signs c with key and returns the card's JSON with the signature,
// which is what the device uploads and the relay serves. c.Signatures is
// replaced.
func SignCard(c *Card, key *did.PrivateKey) ([]byte, error) {
	c.Signatures = nil
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("a2a: %v", err)
	}
	sig, err := signDetached(raw, key)
	if err != nil {
		return nil, err
	}
	c.Signatures = []CardSignature{sig}
	return json.Marshal(c)
}

// signDetached returns the JWS over the canonical form of raw (a JSON object
// with no signatures member).
func signDetached(raw []byte, key *did.PrivateKey) (CardSignature, error) {
	payload, err := canon.Transform(raw)
	if err != nil {
		return CardSignature{}, err
	}
	h, _ := json.Marshal(jwsHeader{Alg: "EdDSA", Kid: key.DID().String(), Typ: "JOSE"})
	protected := b64url.EncodeToString(h)
	input := protected + "." + b64url.EncodeToString(payload)
	return CardSignature{Protected: protected, Signature: b64url.EncodeToString(key.Sign([]byte(input)))}, nil
}

// VerifyCard checks that raw is a card signed by agent: some signature's
// protected header names kid == agent and alg EdDSA, and that signature
// verifies over the canonical form of raw without its signatures member.
// Signatures by other kids are ignored. It returns a *CardError wrapping
// ErrCardMalformed, ErrCardUnsigned or ErrCardSignature.
func VerifyCard(raw []byte, agent did.DID) error {
	payload, sigs, err := splitSignatures(raw)
	if err != nil {
		return &CardError{Reason: "malformed", Err: fmt.Errorf("%w: %v", ErrCardMalformed, err)}
	}
	for _, s := range sigs {
		hb, err := b64url.DecodeString(s.Protected)
		if err != nil {
			return &CardError{Reason: "malformed", Err: fmt.Errorf("%w: protected header: %v", ErrCardMalformed, err)}
		}
		var h jwsHeader
		if err := json.Unmarshal(hb, &h); err != nil {
			return &CardError{Reason: "malformed", Err: fmt.Errorf("%w: protected header: %v", ErrCardMalformed, err)}
		}
		if h.Kid != agent.String() {
			continue
		}
		// RFC 7515 Section 4.1.11: a crit we do not understand must fail.
		if h.Alg != "EdDSA" || len(h.Crit) > 0 {
			return &CardError{Reason: "signature-invalid", Err: fmt.Errorf("%w: alg %q", ErrCardSignature, h.Alg)}
		}
		sig, err := b64url.DecodeString(s.Signature)
		if err != nil {
			return &CardError{Reason: "malformed", Err: fmt.Errorf("%w: signature: %v", ErrCardMalformed, err)}
		}
		input := s.Protected + "." + b64url.EncodeToString(payload)
		if !ed25519.Verify(agent.PublicKey(), []byte(input), sig) {
			return &CardError{Reason: "signature-invalid", Err: ErrCardSignature}
		}
		return nil
	}
	return &CardError{Reason: "unsigned", Err: fmt.Errorf("%w: no signature with kid %s", ErrCardUnsigned, agent)}
}

// splitSignatures returns the canonical form of the card object raw without
// its signatures member, and those signatures.
func splitSignatures(raw []byte) ([]byte, []CardSignature, error) {
	// Canonicalising first rejects duplicate members, lone surrogates and
	// invalid UTF-8 before anything is interpreted.
	if _, err := canon.Transform(raw); err != nil {
		return nil, nil, err
	}
	var m map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, nil, fmt.Errorf("not a JSON object")
	}
	var sigs []CardSignature
	if s, ok := m["signatures"]; ok {
		if err := json.Unmarshal(s, &sigs); err != nil {
			return nil, nil, fmt.Errorf("signatures: %v", err)
		}
	}
	delete(m, "signatures")
	rest, err := json.Marshal(m)
	if err != nil {
		return nil, nil, err
	}
	payload, err := canon.Transform(rest)
	return payload, sigs, err
}
