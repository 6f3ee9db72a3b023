package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/torpor-dev/torpor/internal/safetext"
	"log/slog"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// The purpose and schema of a command object (docs/mqtt.md, "Commands";
// transport/mqtt/command, which the relay does not link: it links paho).
// TestCommandConstants keeps them equal.
const (
	commandPurpose = "torpor:command"
	commandSchema  = "https://torpor.dev/schemas/mqtt/command/v1"
)

// MQTTCommand is a message an operator published on a device's cmd
// topic, as the embedded broker carried it (transport/broker.Command;
// the relay does not link the broker: torpor-conformance links the
// relay).
type MQTTCommand struct {
	// Operator is the DID the publisher's connection token proved.
	Operator did.DID
	// Device is the topic's device name.
	Device      string
	ContentType string
	Payload     []byte
}

// CommandAudit returns the function, for the embedded broker's
// Config.OnCommand, that records, in st, every command an operator published on a device's cmd
// topic: after its signature verified, its operation, device, object id
// and purpose (never its arguments); otherwise refused, with why, under
// the DID the publisher's connection token proved. Records are dated on
// clk.
func CommandAudit(st audit.Store, clk clock.Clock, log *slog.Logger) func(MQTTCommand) {
	clk = clock.Or(clk)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(c MQTTCommand) {
		rec := verifyCommand(c, clk.Now())
		rec.Time = clk.Now().UTC()
		if err := st.Append(context.Background(), rec); err != nil {
			log.Error("audit log: a record was lost", "action", rec.Action, "operator", rec.Operator, "err", err)
		}
	}
}

// commandPayload is what the audit reads of a command's payload.
type commandPayload struct {
	Device string `json:"device"`
	Op     string `json:"op"`
}

// verifyCommand checks c as a device will, but for the device's own
// checks (sequence, operator list), and returns its record.
func verifyCommand(c MQTTCommand, now time.Time) audit.Record {
	rec := audit.Record{Operator: c.Operator.String(), Action: audit.ActionCommand, Device: c.Device,
		Detail: "mqtt name " + c.Device, Outcome: audit.Refused}
	j, err := envelope.DecodePayload(c.ContentType, c.Payload)
	if err != nil {
		rec.Reason = "undecodable payload"
		return rec
	}
	o, err := governed.Parse(j)
	if err != nil {
		rec.Reason = "not a Governed Object"
		return rec
	}
	rec.ObjectID, rec.Purpose = clip(o.ID), clip(o.Governance.Purpose)
	var p commandPayload
	switch {
	case o.VerifySignature() != nil:
		rec.Reason = "signature does not verify"
	case o.Issuer != c.Operator:
		rec.Reason = fmt.Sprintf("signed by %s, not by the publisher's DID", o.Issuer)
	case o.Governance.Purpose != commandPurpose || o.Semantic.Schema != commandSchema:
		rec.Reason = "not a command (purpose or schema)"
	case json.Unmarshal(o.Payload, &p) != nil || p.Op == "":
		rec.Reason = "malformed command payload"
	default:
		rec.Command, rec.Device, rec.Outcome = clip(p.Op), clip(p.Device), audit.OK
		if exp, ok := o.Expiry(); ok && now.After(exp) {
			rec.Outcome, rec.Reason = audit.Refused, "expired"
		}
	}
	return rec
}

// clip bounds a string a publisher chose, at a character boundary, with
// what a page would hide shown (safetext.Clip).
func clip(s string) string {
	if c := safetext.Clip(s, 128); c != s {
		return c + "…"
	}
	return s
}
