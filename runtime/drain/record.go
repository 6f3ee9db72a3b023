package drain

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// Record is one queued request as the relay hands it over the link.
type Record struct {
	Seq       uint64
	From      string    // the sender DID the relay's transport token proved
	ExpiresAt time.Time // queue TTL; for reporting
	Body      []byte    // the raw JSON-RPC request
}

// errOpaque marks a body that is not a message submission at all.
type errOpaque struct{ why string }

func (e errOpaque) Error() string { return e.why }

// submitted is the message a queued JSON-RPC body submits: its parts, and
// the extensions it activates with its metadata (for the Autonomy
// Envelope, transport/a2a's PresentedEnvelope).
type submitted struct {
	parts      []a2a.Part
	extensions []string
	metadata   json.RawMessage
}

// message returns the message a queued JSON-RPC body submits. A body that is not a JSON-RPC message submission (not JSON, a
// duplicate member, nested too deep, another method) is opaque (errOpaque):
// the drain refuses it and acknowledges it, so that it leaves the queue.
// A submission whose message is malformed is an error to report.
func message(body []byte) (submitted, error) {
	if m, ok := readMessage(body); ok {
		return m, nil
	}
	return decodeMessage(body)
}

// readMessage is message for a body a2a.ReadBody reads without a refusal:
// its parts alias body, read by the walks the relay classified it with,
// which follow encoding/json's rules (a2a's FuzzReadBodyAsByDecoder), so
// the parts are those decodeMessage would decode, without copying each
// part twice. It returns false for any other body (not a request, not a
// submission, no parts or none an agent takes, extensions or metadata of
// the wrong type): decodeMessage reads those, with its errors.
func readMessage(body []byte) (submitted, bool) {
	rb := a2a.ReadBody(body)
	if rb.Err != nil || !rb.Send || rb.Refusal != nil || len(rb.Parts) == 0 {
		return submitted{}, false
	}
	var params struct {
		Message struct {
			Extensions []string        `json:"extensions"`
			Metadata   json.RawMessage `json:"metadata"`
		} `json:"message"`
	}
	if err := json.Unmarshal(rb.Request.Params, &params); err != nil {
		return submitted{}, false
	}
	m := submitted{parts: make([]a2a.Part, len(rb.Parts)),
		extensions: params.Message.Extensions, metadata: params.Message.Metadata}
	for i, p := range rb.Parts {
		m.parts[i] = p.Part
	}
	return m, true
}

// decodeMessage is message by encoding/json and a2a.DecodePart.
func decodeMessage(body []byte) (submitted, error) {
	req, err := a2a.ParseRequest(body)
	if err != nil {
		return submitted{}, errOpaque{"not a JSON-RPC request: " + err.Error()}
	}
	if !a2a.IsSendMethod(req.Method) {
		return submitted{}, errOpaque{fmt.Sprintf("JSON-RPC method %q is not a message submission", truncate(req.Method))}
	}
	var params struct {
		Message struct {
			Parts      []json.RawMessage `json:"parts"`
			Extensions []string          `json:"extensions"`
			Metadata   json.RawMessage   `json:"metadata"`
		} `json:"message"`
	}
	if err := json.Unmarshal(req.Params, &params); err != nil {
		return submitted{}, fmt.Errorf("params: %v", err)
	}
	if len(params.Message.Parts) == 0 {
		return submitted{}, fmt.Errorf("message has no parts")
	}
	m := submitted{parts: make([]a2a.Part, len(params.Message.Parts)),
		extensions: params.Message.Extensions, metadata: params.Message.Metadata}
	for i, raw := range params.Message.Parts {
		p, err := a2a.DecodePart(raw)
		if err != nil {
			return submitted{}, fmt.Errorf("part %d: %v", i, err)
		}
		m.parts[i] = p
	}
	return m, nil
}

// presented returns the Autonomy Envelope message m presents for its
// consequential actions (nil when m does not activate the extension), with
// from, the sender the relay proved. Metadata that does not hold a chain
// is not m's failure but the envelope's: the gate holds the actions it
// would have authorized (reason envelope-malformed), and m's other parts
// are processed as usual.
func (m submitted) presented(from did.DID) *gate.Presented {
	em, ok, err := a2a.PresentedEnvelope(m.extensions, m.metadata)
	if !ok {
		return nil
	}
	pr := &gate.Presented{}
	if !from.IsZero() {
		pr.Sender = from.String()
	}
	if err != nil {
		pr.Malformed = truncate(err.Error())
		return pr
	}
	pr.Chain, pr.Pulse = em.Passports, em.Pulse
	return pr
}

// plaintextObject returns the Governed Object in decrypted MLS application
// data: a JSON object whose member "object" holds it (draft Section 7.5;
// other members are ignored).
func plaintextObject(pt []byte) (json.RawMessage, error) {
	var v struct {
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(pt, &v); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if len(v.Object) == 0 || v.Object[0] != '{' {
		return nil, fmt.Errorf("no member \"object\" holding a JSON object")
	}
	return v.Object, nil
}

func parseFrom(s string) did.DID {
	d, err := did.Parse(s)
	if err != nil {
		return did.DID{}
	}
	return d
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
