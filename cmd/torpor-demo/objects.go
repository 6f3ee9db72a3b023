package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// Outcomes an object is expected to have at the agent.
const (
	expectAccept = "accepted" // handed to the application
	expectHold   = "held"     // consequential: held until the owner confirms
	// expectDelegated: an action presented under an Autonomy Envelope
	// that runs unsupervised; expectRefused: one the agent holds for its
	// owner with Letter.Reason, never confirmed in the story.
	expectDelegated = "delegated"
	expectRefused   = "held-envelope"
)

// schemaMessage and schemaAction name the demo's payload types.
const (
	schemaMessage = "https://torpor.dev/schemas/demo/message/v1"
	schemaAction  = "https://torpor.dev/schemas/demo/action/v1"
	schemaPolicy  = "https://torpor.dev/schemas/demo/policy/v1"
)

// Letter is one object the sender sends, with what the agent should make of
// it: expectAccept, expectHold, or the receiver's rejection cause
// (governed reason names such as "expired").
type Letter struct {
	Label  string // what a reader is told, e.g. "forged signature"
	Expect string
	Object json.RawMessage
	ID     string // the object id
	Key    string // the ledger key of an action (issuer + " " + idempotency key)
	// Reason is the hold reason of an expectRefused action; Envelope the
	// Autonomy Envelope the letter presents (nil: none).
	Reason   string
	Envelope *a2a.EnvelopeMetadata

	// What the demo saw of it.
	answer    string // the relay's answer to the send
	seen      bool   // a rejection with the expected cause was logged
	held      bool   // the agent logged the hold of this action
	heldFor   string // the reason it logged
	confirmed string // the outcome of the owner's confirmation over MQTT
	delivered int    // times the application received it
}

// forge builds the objects of the demo. Times come from now, the sender's
// (scaled) clock.
type forge struct {
	sender   *did.PrivateKey // the MLS sender and honest issuer
	stranger *did.PrivateKey // a key that is not the sender's
}

func (f forge) sign(key *did.PrivateKey, t governed.Template) (*governed.Object, json.RawMessage, error) {
	o, err := governed.Sign(key, t)
	if err != nil {
		return nil, nil, err
	}
	b, err := o.MarshalJSON()
	return o, b, err
}

func (f forge) letter(label, expect string, key *did.PrivateKey, t governed.Template) (Letter, error) {
	o, b, err := f.sign(key, t)
	if err != nil {
		return Letter{}, fmt.Errorf("demo: signing %q: %w", label, err)
	}
	return Letter{Label: label, Expect: expect, Object: b, ID: o.ID}, nil
}

// message is a comms:message with text, issued now.
func message(now time.Time, text string) governed.Template {
	return governed.Template{IssuedAt: now, Semantic: governed.Semantic{Schema: schemaMessage},
		Payload: map[string]string{"text": text}, Purpose: "comms:message"}
}

// Valid is an honest message.
func (f forge) Valid(now time.Time, text string) (Letter, error) {
	return f.letter(fmt.Sprintf("message %q", text), expectAccept, f.sender, message(now, text))
}

// Forged is an honest message whose payload was changed after signing:
// its signature no longer verifies (draft Section 8.1, check 2).
func (f forge) Forged(now time.Time, text, changed string) (Letter, error) {
	l, err := f.letter("forged signature (payload changed after signing)", "signature-invalid", f.sender, message(now, text))
	if err != nil {
		return l, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(l.Object, &m); err != nil {
		return l, err
	}
	m["payload"], _ = json.Marshal(map[string]string{"text": changed})
	l.Object, err = json.Marshal(m)
	return l, err
}

// Expired is a message that expires after ttl, before the agent wakes
// (check 4: expiry is judged by the trusted time at dequeue).
func (f forge) Expired(now time.Time, ttl time.Duration) (Letter, error) {
	t := message(now, "valid only briefly")
	t.ExpiresAt = now.Add(ttl)
	return f.letter(fmt.Sprintf("expires %v after sending", ttl), "expired", f.sender, t)
}

// WrongSender is a message signed by the stranger, about itself, sent
// inside the sender's MLS session: the signature is fine but issuerDid is
// not the MLS sender (check 3).
func (f forge) WrongSender(now time.Time) (Letter, error) {
	return f.letter("wrong sender (signed by another DID, sent in our MLS session)", "sender-mismatch", f.stranger,
		message(now, "I am someone else"))
}

// NotPermitted is a message whose purpose the agent does not accept
// (check 6).
func (f forge) NotPermitted(now time.Time) (Letter, error) {
	t := message(now, "rm -rf /")
	t.Purpose = "system:shell"
	return f.letter(`purpose "system:shell" not permitted`, "purpose-not-permitted", f.sender, t)
}

// Action is a consequential request (purpose action:*) with an
// idempotency key; the agent holds it until its owner confirms.
func (f forge) Action(now time.Time, what, idem string, cents int64) (Letter, error) {
	t := governed.Template{IssuedAt: now, Semantic: governed.Semantic{Schema: schemaAction},
		Payload: map[string]any{"action": what, "idempotencyKey": idem, "amount": cents, "unit": "EUR-cent"},
		Purpose: "action:" + what}
	l, err := f.letter(fmt.Sprintf("action:%s (%d.%02d EUR, key %s)", what, cents/100, cents%100, idem), expectHold, f.sender, t)
	l.Key = f.sender.DID().String() + " " + idem
	return l, err
}

// Replay returns l again, byte for byte: the agent admits an object once
// (check 5).
func Replay(l Letter) Letter {
	return Letter{Label: "replay of " + l.Label, Expect: "replay", Object: l.Object, ID: l.ID}
}
