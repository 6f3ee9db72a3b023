package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// ExtEnvelope is the URI of the Autonomy Envelope extension (the seed
// proposal "Autonomy Envelope + liveness-gated authority";
// docs/envelope.md). A card declares it with EnvelopeParams; a message
// activates it by listing the URI in its extensions and carries, in its
// metadata under the URI, the passport chain that authorizes its Governed
// Object parts (EnvelopeMetadata).
const ExtEnvelope = "https://github.com/torpor-dev/torpor/blob/main/docs/envelope.md#the-extension"

// EnvelopeParams are the params of a card's ExtEnvelope entry: what a
// presented passport must be for this agent to verify it.
type EnvelopeParams struct {
	// Scope is the scope algebra's version ("lap-scope-v0").
	Scope string `json:"scope"`
	// Proofs are the proof classes accepted: "jws-compact".
	Proofs []string `json:"proofs"`
	// Algorithms are the JWS algorithms accepted: "EdDSA".
	Algorithms []string `json:"algorithms"`
	// MaxChain is the longest chain verified (principal first).
	MaxChain int `json:"maxChain"`
}

// EnvelopeMetadata is the member a message's metadata holds under
// ExtEnvelope.
type EnvelopeMetadata struct {
	// Passports is the chain, root (the principal's passport) first, each
	// a JWS in compact serialization (governed/envelope).
	Passports []string `json:"passports"`
	// Pulse is the holder's latest signed liveness pulse (package pulse's
	// JSON), for an envelope with decay_max_sec; optional.
	Pulse json.RawMessage `json:"pulse,omitempty"`
}

// MaxPassports bounds the chain a message may carry.
const MaxPassports = 8

// ErrEnvelopeMetadata is returned (wrapped) for a message whose metadata
// under ExtEnvelope is malformed.
var ErrEnvelopeMetadata = errors.New("a2a: malformed autonomy envelope metadata")

// PresentedEnvelope returns the envelope metadata message m presents: ok
// is false when m does not list ExtEnvelope in its extensions (a chain in
// the metadata of a message that does not activate the extension is
// ignored). A listed extension with no or malformed metadata is an error.
func PresentedEnvelope(extensions []string, metadata json.RawMessage) (EnvelopeMetadata, bool, error) {
	listed := false
	for _, e := range extensions {
		listed = listed || e == ExtEnvelope
	}
	if !listed {
		return EnvelopeMetadata{}, false, nil
	}
	var meta map[string]json.RawMessage
	if len(metadata) == 0 || json.Unmarshal(metadata, &meta) != nil || meta[ExtEnvelope] == nil {
		return EnvelopeMetadata{}, true, fmt.Errorf("%w: the message lists the extension but its metadata has no member %q", ErrEnvelopeMetadata, ExtEnvelope)
	}
	raw := meta[ExtEnvelope]
	if err := strictjson.Check(raw); err != nil {
		return EnvelopeMetadata{}, true, fmt.Errorf("%w: %v", ErrEnvelopeMetadata, err)
	}
	var em EnvelopeMetadata
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&em); err != nil {
		return EnvelopeMetadata{}, true, fmt.Errorf("%w: %v", ErrEnvelopeMetadata, err)
	}
	if len(em.Passports) == 0 || len(em.Passports) > MaxPassports {
		return EnvelopeMetadata{}, true, fmt.Errorf("%w: %d passports, want 1 to %d", ErrEnvelopeMetadata, len(em.Passports), MaxPassports)
	}
	return em, true, nil
}

// PresentEnvelope activates the extension on m and puts em in its
// metadata under ExtEnvelope, keeping the metadata's other members.
func PresentEnvelope(m *Message, em EnvelopeMetadata) error {
	if len(em.Passports) == 0 || len(em.Passports) > MaxPassports {
		return fmt.Errorf("a2a: %d passports, want 1 to %d", len(em.Passports), MaxPassports)
	}
	meta := map[string]json.RawMessage{}
	if len(m.Metadata) > 0 {
		if err := json.Unmarshal(m.Metadata, &meta); err != nil {
			return fmt.Errorf("a2a: message metadata: %v", err)
		}
	}
	b, err := json.Marshal(em)
	if err != nil {
		return err
	}
	meta[ExtEnvelope] = b
	if m.Metadata, err = json.Marshal(meta); err != nil {
		return err
	}
	for _, e := range m.Extensions {
		if e == ExtEnvelope {
			return nil
		}
	}
	m.Extensions = append(m.Extensions, ExtEnvelope)
	return nil
}
