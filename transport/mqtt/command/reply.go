package command

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
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

// Reply is the payload of a reply object (envelope.PurposeReply,
// envelope.SchemaReply): the answer to one command.
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

// VerifyReply decodes and checks a reply as an operator received it at
// now: its signature verifies, it is a reply, it has not expired, and,
// unless device is the zero DID, the device signed it (envelope.VerifyObject).
// It returns the reply and its object.
func VerifyReply(contentType string, payload []byte, device did.DID, now time.Time) (Reply, *governed.Object, error) {
	var r Reply
	o, err := envelope.VerifyObject(contentType, payload, device, envelope.SchemaReply, envelope.PurposeReply, &r, now)
	if err != nil {
		return Reply{}, nil, err
	}
	if r.Device != o.Issuer.String() {
		return Reply{}, nil, fmt.Errorf("%w: reply names device %s but is signed by %s", envelope.ErrNotFromDevice, truncate(r.Device), o.Issuer)
	}
	return r, o, nil
}
