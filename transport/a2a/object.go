package a2a

import (
	"encoding/json"
)

// What an Atom agent takes from a message. The agent (runtime/drain, and
// its live answer in runtime/live.go) and the relay (transport/relay, at
// enqueue) both decide by these functions, so a message the agent would
// drop gets the same answer whether the agent is awake or asleep
// (docs/a2a.md, "Messages a device never takes").

// ObjectRejected returns the JSON-RPC error an Atom agent answers to a
// message submission of which it took nothing. It is deliberately coarse:
// it does not tell the sender which check failed (draft-chapman-a2a-mls-03,
// Section 8.4).
func ObjectRejected() *RPCError {
	return &RPCError{Code: CodeInvalidParams, Message: "object rejected"}
}

// ObjectMediaType returns the effective media type (Section 7.3) of a part
// an Atom agent takes: MediaTypeDataObject, MediaTypeMLSWire or
// MediaTypeMLSHandshake. For any other part it returns a *PartError: with
// ErrNoObject for text, a file or data of another media type, else the
// error of MediaTypeOf (malformed, media-type-conflict). Taking a part is
// no promise: the agent still checks what it carries.
func ObjectMediaType(p Part) (string, error) {
	if p.Text != nil && p.MediaType == "" {
		return "", partErr(ErrNoObject, "text part")
	}
	mt, _, err := MediaTypeOf(p)
	if err != nil {
		return "", err
	}
	switch mt {
	case MediaTypeDataObject, MediaTypeMLSWire, MediaTypeMLSHandshake:
		return mt, nil
	}
	if len(mt) > 64 {
		mt = mt[:64] + "…"
	}
	return "", partErr(ErrNoObject, "part of media type %s", mt)
}

// DecodePart decodes one part of a message. Besides the A2A v1.0 and v0.3
// shapes it accepts the bare shape {"mediaType": …, "object": {…}} with no
// content member, which the reference's offline-delivery vectors (od-050
// to od-052) queue and the reference's dequeue extractor accepts: it is
// read as a data part whose data is {"mediaType": …, "object": …}, so the
// media-type rules of Section 7.3 still apply to it. See docs/agent.md.
func DecodePart(raw json.RawMessage) (Part, error) {
	var p Part
	if err := json.Unmarshal(raw, &p); err != nil {
		return Part{}, err
	}
	if p.Data != nil || p.Text != nil || p.Raw != nil || p.URL != nil || p.File != nil {
		return p, nil
	}
	var bare struct {
		MediaType string          `json:"mediaType"`
		Object    json.RawMessage `json:"object"`
	}
	if json.Unmarshal(raw, &bare) != nil || bare.Object == nil {
		return p, nil // no content: MediaTypeOf reports it malformed
	}
	data, err := json.Marshal(bare)
	if err != nil {
		return Part{}, err
	}
	return Part{Data: data}, nil
}

// Refusal returns ObjectRejected for a request body an Atom agent drops
// whatever its state: a message submission whose params cannot be read,
// or whose message has parts of which ObjectMediaType takes none. It
// returns nil for everything else. Only the agent can judge a part it
// takes (signature, expiry, replay, MLS state); a body that is not a
// message submission stays opaque to it; and a submission without parts
// is stored by a sleeping agent's relay, as the offline-delivery profile's
// vector od-010 expects.
func Refusal(body []byte) *RPCError {
	req, err := ParseRequest(body)
	if err != nil || !IsSendMethod(req.Method) {
		return nil
	}
	var params struct {
		Message struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"message"`
	}
	if json.Unmarshal(req.Params, &params) != nil {
		return ObjectRejected()
	}
	if len(params.Message.Parts) == 0 {
		return nil
	}
	for _, raw := range params.Message.Parts {
		p, err := DecodePart(raw)
		if err != nil {
			return ObjectRejected()
		}
		if _, err := ObjectMediaType(p); err == nil {
			return nil
		}
	}
	return ObjectRejected()
}
