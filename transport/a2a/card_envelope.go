package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The values of EnvelopeParams Torpor declares and accepts: the scope
// algebra's version (governed/envelope's Version), the proof class (a JWS
// in the compact serialization, RFC 7515, Section 7.1) and its algorithm
// (RFC 8037, Section 3.1).
const (
	EnvelopeScopeV0    = "lap-scope-v0"
	EnvelopeProofJWS   = "jws-compact"
	EnvelopeAlgEdDSA   = "EdDSA"
	envelopeExtSummary = "Autonomy Envelope passport chains, verified at dequeue"
)

// DefaultEnvelopeParams are the params torpor-agent declares: lap-scope-v0
// scopes in EdDSA compact JWS passports, chains of up to MaxPassports.
func DefaultEnvelopeParams() *EnvelopeParams {
	return &EnvelopeParams{
		Scope:      EnvelopeScopeV0,
		Proofs:     []string{EnvelopeProofJWS},
		Algorithms: []string{EnvelopeAlgEdDSA},
		MaxChain:   MaxPassports,
	}
}

// envelopeExtension is the card's ExtEnvelope entry for p. The card is
// re-signed and re-sent on every wake, so the entry stays small: a short
// description, and the params.
func envelopeExtension(p *EnvelopeParams) (Extension, error) {
	if err := p.validate(); err != nil {
		return Extension{}, schemaErr("envelope params: %v", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return Extension{}, fmt.Errorf("a2a: %v", err)
	}
	return Extension{URI: ExtEnvelope, Description: envelopeExtSummary, Params: b}, nil
}

func (p *EnvelopeParams) validate() error {
	switch {
	case p.Scope == "":
		return errors.New("scope is empty")
	case len(p.Proofs) == 0:
		return errors.New("proofs is empty")
	case len(p.Algorithms) == 0:
		return errors.New("algorithms is empty")
	case p.MaxChain < 1:
		return fmt.Errorf("maxChain %d is below 1", p.MaxChain)
	}
	for _, s := range append(append([]string{}, p.Proofs...), p.Algorithms...) {
		if s == "" {
			return errors.New("an empty proof class or algorithm")
		}
	}
	return nil
}

// ValidateEnvelopeExtension checks raw, one capabilities.extensions entry,
// as an ExtEnvelope entry (docs/envelope.md, "The extension"): exactly
// uri, description (non-empty), required (false) and params, where params
// has exactly scope (a non-empty string), proofs and algorithms (non-empty
// lists of non-empty strings) and maxChain (an integer, at least 1). It
// returns a *CardError wrapping ErrExtensionSchema that names the first
// violation.
func ValidateEnvelopeExtension(raw []byte) error {
	m, err := schemaObject(raw, "uri", "description", "required", "params")
	if err != nil {
		return err
	}
	if err := schemaCommon(m, ExtEnvelope); err != nil {
		return err
	}
	_, err = envelopeParams(m["params"])
	return err
}

func envelopeParams(raw json.RawMessage) (EnvelopeParams, error) {
	pm, err := schemaObject(raw, "scope", "proofs", "algorithms", "maxChain")
	if err != nil {
		return EnvelopeParams{}, schemaErr("envelope params: %v", errors.Unwrap(err))
	}
	var p EnvelopeParams
	for k, dst := range map[string]any{"scope": &p.Scope, "proofs": &p.Proofs, "algorithms": &p.Algorithms, "maxChain": &p.MaxChain} {
		if err := json.Unmarshal(pm[k], dst); err != nil {
			return EnvelopeParams{}, schemaErr("envelope params.%s: %v", k, err)
		}
	}
	if err := p.validate(); err != nil {
		return EnvelopeParams{}, schemaErr("envelope params: %v", err)
	}
	return p, nil
}

// Envelope returns the params of the card's ExtEnvelope entry and whether
// the card declares the extension; an entry that ValidateEnvelopeExtension
// refuses is an error.
func (c *Card) Envelope() (EnvelopeParams, bool, error) {
	e, ok := c.Extension(ExtEnvelope)
	if !ok {
		return EnvelopeParams{}, false, nil
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return EnvelopeParams{}, true, err
	}
	if err := ValidateEnvelopeExtension(raw); err != nil {
		return EnvelopeParams{}, true, err
	}
	p, err := envelopeParams(e.Params)
	return p, true, err
}
