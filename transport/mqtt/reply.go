package mqtt

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
)

// Outcome is what became of a command.
type Outcome string

const (
	// OutcomeOK: the command ran and did what it asked.
	OutcomeOK Outcome = "ok"
	// OutcomeFailed: the command ran and failed; Reason says why
	// ("unsupported" when the device cannot do it at all).
	OutcomeFailed Outcome = "failed"
	// OutcomeRejected: the command did not run; Reason is one of the
	// rejection reasons (see Reason*).
	OutcomeRejected Outcome = "rejected"
	// OutcomeIndeterminate: the device accepted the command before a
	// restart and cannot tell whether it took effect; its ledger key
	// waits for reconcile.
	OutcomeIndeterminate Outcome = "indeterminate"
)

// ReasonUnsupportedContentType rejects a message whose MQTT content type
// is neither JSON nor CBOR. The other rejection reasons are the
// receiver-check reasons of package governed and those of runtime/manage.
const ReasonUnsupportedContentType = "unsupported-content-type"

// Purposes and schemas of the Governed Objects a device publishes.
const (
	PurposeReply  = "torpor:command-reply"
	PurposeStatus = "torpor:status"
	PurposeEvent  = "torpor:event"

	SchemaReply  = "https://torpor.dev/schemas/mqtt/reply/v1"
	SchemaStatus = "https://torpor.dev/schemas/mqtt/status/v1"
	SchemaEvent  = "https://torpor.dev/schemas/mqtt/event/v1"
)

// Reply is the payload of a reply object: the answer to one command.
type Reply struct {
	Device   string          `json:"device"`             // the replying device's DID
	Command  string          `json:"command"`            // the command's id ("" when unreadable)
	Operator string          `json:"operator,omitempty"` // the command's issuer, when verified
	Seq      uint64          `json:"seq,omitempty"`
	Op       string          `json:"op,omitempty"`
	Outcome  Outcome         `json:"outcome"`
	Reason   string          `json:"reason,omitempty"`
	Detail   string          `json:"detail,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
}

// DefaultReplyTTL is the lifetime of replies, statuses and events.
const DefaultReplyTTL = 7 * 24 * time.Hour

// signReply signs r as a reply object.
func signReply(key *did.PrivateKey, now time.Time, r Reply) (*governed.Object, error) {
	return signDeviceObject(key, now, SchemaReply, PurposeReply, r, DefaultReplyTTL)
}

func signDeviceObject(key *did.PrivateKey, now time.Time, schema, purpose string, payload any, ttl time.Duration) (*governed.Object, error) {
	return governed.Sign(key, governed.Template{
		IssuedAt: now,
		Semantic: governed.Semantic{Schema: schema},
		Payload:  payload,
		Purpose:  purpose,
		TTL:      ttl,
	})
}

// ErrNotFromDevice is returned (wrapped) by the Verify functions when a
// reply, status or event was not signed by the device the caller expected,
// or is not one.
var ErrNotFromDevice = errors.New("mqtt: not a valid object from the device")

// VerifyReply decodes and checks a reply as an operator received it: its
// signature verifies, it is a reply, and, unless device is the zero DID,
// the device signed it. It returns the reply and its object.
func VerifyReply(contentType string, payload []byte, device did.DID) (Reply, *governed.Object, error) {
	var r Reply
	o, err := verifyDeviceObject(contentType, payload, device, SchemaReply, PurposeReply, &r)
	if err != nil {
		return Reply{}, nil, err
	}
	if r.Device != o.Issuer.String() {
		return Reply{}, nil, fmt.Errorf("%w: reply names device %s but is signed by %s", ErrNotFromDevice, truncate(r.Device), o.Issuer)
	}
	return r, o, nil
}

func verifyDeviceObject(contentType string, payload []byte, device did.DID, schema, purpose string, dst any) (*governed.Object, error) {
	j, err := decodePayload(contentType, payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotFromDevice, err)
	}
	o, err := governed.Parse(j)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotFromDevice, err)
	}
	if err := o.VerifySignature(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotFromDevice, err)
	}
	if !device.IsZero() && o.Issuer != device {
		return nil, fmt.Errorf("%w: signed by %s, want %s", ErrNotFromDevice, o.Issuer, device)
	}
	if o.Governance.Purpose != purpose || o.Semantic.Schema != schema {
		return nil, fmt.Errorf("%w: purpose %q schema %q, want %q %q", ErrNotFromDevice,
			truncate(o.Governance.Purpose), truncate(o.Semantic.Schema), purpose, schema)
	}
	if err := json.Unmarshal(o.Payload, dst); err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrNotFromDevice, err)
	}
	return o, nil
}
