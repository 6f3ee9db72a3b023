package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ExtPolicy is Torpor's extension by which an agent publishes what it
// takes beyond the Atom parts, so that its relay refuses at enqueue, with
// the agent's own answer, a message the agent would refuse when it drains
// it (docs/relay.md, "Policy extension"). Its params are exactly Policy.
const ExtPolicy = "https://github.com/torpor-dev/torpor/blob/main/docs/relay.md#policy-extension"

// Policy is the params of ExtPolicy.
type Policy struct {
	// Plaintext is true when the agent takes unencrypted Governed Objects
	// (data-object parts, draft Section 7.4); false when it takes them
	// only inside MLS (torpor-agent's allowPlaintext).
	Plaintext bool `json:"plaintext"`
}

// Policy returns the card's ExtPolicy params and whether it has the
// extension; a card without it says nothing of the agent's policy.
func (c *Card) Policy() (Policy, bool, error) {
	e, ok := c.Extension(ExtPolicy)
	if !ok {
		return Policy{}, false, nil
	}
	var p Policy
	d := json.NewDecoder(bytes.NewReader(e.Params))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return Policy{}, true, &CardError{Reason: "schema", Err: fmt.Errorf("%w: policy: %v", ErrExtensionSchema, err)}
	}
	return p, true, nil
}

// RefusesPlaintext reports whether the card raw, which its agent signed,
// declares that the agent takes no unencrypted Governed Object. A card
// that cannot be read or has no ExtPolicy declares nothing: false.
func RefusesPlaintext(raw []byte) bool {
	c, err := ParseCard(raw)
	if err != nil {
		return false
	}
	p, ok, err := c.Policy()
	return ok && err == nil && !p.Plaintext
}
