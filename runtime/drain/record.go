package drain

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
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

// message returns the parts of the message a queued JSON-RPC body
// submits. A body that is not a JSON-RPC message submission (not JSON, a
// duplicate member, nested too deep, another method) is opaque (errOpaque):
// the drain refuses it and acknowledges it, so that it leaves the queue.
// A submission whose message is malformed is an error to report.
func message(body []byte) ([]a2a.Part, error) {
	req, err := a2a.ParseRequest(body)
	if err != nil {
		return nil, errOpaque{"not a JSON-RPC request: " + err.Error()}
	}
	if !a2a.IsSendMethod(req.Method) {
		return nil, errOpaque{fmt.Sprintf("JSON-RPC method %q is not a message submission", truncate(req.Method))}
	}
	var params struct {
		Message struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"message"`
	}
	if err := json.Unmarshal(req.Params, &params); err != nil {
		return nil, fmt.Errorf("params: %v", err)
	}
	if len(params.Message.Parts) == 0 {
		return nil, fmt.Errorf("message has no parts")
	}
	parts := make([]a2a.Part, len(params.Message.Parts))
	for i, raw := range params.Message.Parts {
		p, err := a2a.DecodePart(raw)
		if err != nil {
			return nil, fmt.Errorf("part %d: %v", i, err)
		}
		parts[i] = p
	}
	return parts, nil
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
