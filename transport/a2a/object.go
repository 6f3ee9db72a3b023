package a2a

import (
	"encoding/json"

	"github.com/torpor-dev/torpor/internal/canon"
	"github.com/torpor-dev/torpor/internal/strictjson"
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
	mt, _, err := objectPart(p, canon.MemberView) // the members are not kept
	return mt, err
}

// objectPart is ObjectMediaType that also returns the data members, split
// by members (mediaTypeOf).
func objectPart(p Part, members func([]byte) (map[string]json.RawMessage, error)) (string, map[string]json.RawMessage, error) {
	if p.Text != nil && p.MediaType == "" {
		return "", nil, partErr(ErrNoObject, "text part")
	}
	mt, data, err := mediaTypeOf(p, members)
	if err != nil {
		return "", nil, err
	}
	switch mt {
	case MediaTypeDataObject, MediaTypeMLSWire, MediaTypeMLSHandshake:
		return mt, data, nil
	}
	if len(mt) > 64 {
		mt = mt[:64] + "…"
	}
	return "", nil, partErr(ErrNoObject, "part of media type %s", mt)
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

// Refusal returns ReadBody(body).Refusal.
func Refusal(body []byte) *RPCError {
	return ReadBody(body).Refusal
}

// Body is a request body read once, as an Atom agent reads it: the relay
// classifies what it stores by it and the agent's drain reads a stored
// record through the same ParseRequest (body.go).
type Body struct {
	// Request is the JSON-RPC request; nil when Err is set.
	Request *Request
	// Err is ParseRequest's error: the body is not a JSON-RPC request an
	// agent reads. Answer it with id null.
	Err *RPCError
	// Send is true for a message submission (IsSendMethod).
	Send bool
	// Parts are the parts of a submission's message.
	Parts []BodyPart
	// Refusal is ObjectRejected for a message submission an Atom agent
	// drops whatever its state: one whose params or parts cannot be read,
	// or whose parts ObjectMediaType takes none of. It is nil for
	// everything else: only the agent can judge a part it takes
	// (signature, expiry, replay, MLS state), and a submission without
	// parts is stored by a sleeping agent's relay, as the offline-delivery
	// profile's vector od-010 expects.
	Refusal *RPCError
}

// BodyPart is one part of a submission.
type BodyPart struct {
	Part Part
	// MediaType is the part's effective media type when ObjectMediaType
	// takes it, else empty.
	MediaType string
	// Data holds the members of a taken part's data object.
	Data map[string]json.RawMessage
}

// ReadBody reads b: ParseRequest, and for a message submission its
// message's parts (as DecodePart reads them, ObjectMediaType), from the
// validated body by walks that follow encoding/json's rules
// (sendparts.go). It reads b once: the strict pass that checks it also
// indexes where its objects and arrays end (bodyIndex), which the walks
// look up instead of reading those values again. The id, params, parts and
// data members of the Body alias b: the caller must not change b while it
// uses them.
func ReadBody(b []byte) Body {
	var arr [8]strictjson.Member
	var spans [32]strictjson.Span // enough for a few parts without the heap
	members, sp, rerr := readStrict(b, arr[:0], spans[:0], indexLevels)
	if rerr != nil {
		return Body{Err: rerr}
	}
	x := &bodyIndex{body: b, spans: sp}
	req, err := x.request(members)
	if err != nil {
		e, ok := err.(*RPCError)
		if !ok {
			e = &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request"}
		}
		return Body{Err: e}
	}
	out := Body{Request: req, Send: IsSendMethod(req.Method)}
	if !out.Send {
		return out
	}
	parts, err := x.sendParts(req.Params) // params.message.parts, as encoding/json reads them
	if err != nil {
		out.Refusal = ObjectRejected()
		return out
	}
	taken := false
	for _, raw := range parts {
		p, err := x.checkedPart(raw)
		if err != nil {
			out.Parts, out.Refusal = nil, ObjectRejected()
			return out
		}
		mt, data, err := objectPart(p, x.checkedMembers)
		taken = taken || err == nil
		out.Parts = append(out.Parts, BodyPart{Part: p, MediaType: mt, Data: data})
	}
	if len(out.Parts) > 0 && !taken {
		out.Refusal = ObjectRejected()
	}
	return out
}
