package relay

import (
	"bytes"
	"encoding/json"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// rpcRequest is what the relay reads of a request body, once per request
// (a2a.ReadBody, the agent's own reading: the relay stores nothing the
// agent would read differently).
type rpcRequest struct {
	// call is true for a JSON-RPC 2.0 request with an id (a call, not a
	// notification): its answer can be a JSON-RPC response.
	call   bool
	id     json.RawMessage
	method string
	kind   queue.Kind
	// invalid is set when the body is not a JSON-RPC request the agent
	// reads (a2a.ParseRequest's error); it is answered with id null.
	invalid *a2a.RPCError
	// refusal is set for a message submission the agent takes nothing of
	// (a2a.Body.Refusal).
	refusal *a2a.RPCError
	// plaintext is true when every part the agent takes is an unencrypted
	// Governed Object (a2a.MediaTypeDataObject), which an agent whose card
	// refuses plaintext (a2a.RefusesPlaintext) would drop.
	plaintext bool
}

func parseRequest(body []byte) rpcRequest {
	b := a2a.ReadBody(body)
	if b.Err != nil {
		return rpcRequest{invalid: b.Err}
	}
	r := rpcRequest{method: b.Request.Method, kind: queue.KindMessage, refusal: b.Refusal}
	if b.Request.ID != nil {
		r.call, r.id = true, b.Request.ID
	}
	plain, other := false, false
	for _, p := range b.Parts {
		if isHandshakePart(p) {
			r.kind = queue.KindHandshake
		}
		switch p.MediaType {
		case a2a.MediaTypeDataObject:
			plain = true
		case a2a.MediaTypeMLSWire, a2a.MediaTypeMLSHandshake:
			other = true
		}
	}
	r.plaintext = plain && !other
	return r
}

// isHandshakePart reports whether a part carries an MLS Welcome or Commit:
// an mls-handshake part, or an mls-wire part whose MLSMessage is a Welcome
// or a PublicMessage with a Commit (draft-chapman-a2a-mls-03, Section
// 7.3: the media type of the part, or of its data for A2A v0.3 senders).
func isHandshakePart(p a2a.BodyPart) bool {
	switch p.MediaType {
	case a2a.MediaTypeMLSHandshake:
		return true
	case a2a.MediaTypeMLSWire:
		var s string
		if a2a.UnquoteString(p.Data["wire"], &s) != nil {
			return false
		}
		wire, err := a2a.DecodeBase64(s)
		return err == nil && isHandshakeMessage(wire)
	}
	return false
}

// MLSMessage wire formats and content types (RFC 9420, Sections 6 and 6.1).
const (
	wirePublicMessage = 1
	wireWelcome       = 3
	contentCommit     = 3
	senderMember      = 1
	senderExternal    = 2
)

// isHandshakeMessage reports whether b is an MLSMessage carrying a Welcome,
// or a PublicMessage whose FramedContent is a Commit (RFC 9420, Sections 6
// and 6.2). A Commit sent as a PrivateMessage cannot be told apart without
// the group's keys; it counts as an ordinary message.
func isHandshakeMessage(b []byte) bool {
	if len(b) < 4 || b[0] != 0 || b[1] != 1 {
		return false
	}
	wf := int(b[2])<<8 | int(b[3])
	if wf == wireWelcome {
		return true
	}
	if wf != wirePublicMessage {
		return false
	}
	r := bytes.NewReader(b[4:])
	// FramedContent: group_id<V>, epoch uint64, sender, authenticated_data<V>, content_type.
	if !skipVector(r) || !skip(r, 8) {
		return false
	}
	st, err := r.ReadByte()
	if err != nil {
		return false
	}
	if (st == senderMember || st == senderExternal) && !skip(r, 4) {
		return false
	}
	if !skipVector(r) {
		return false
	}
	ct, err := r.ReadByte()
	return err == nil && ct == contentCommit
}

// skipVector skips a variable-size vector: a QUIC-style varint length
// (RFC 9420, Section 2.1.2) and that many bytes.
func skipVector(r *bytes.Reader) bool {
	b, err := r.ReadByte()
	if err != nil {
		return false
	}
	n := uint64(b & 0x3f)
	extra := 0
	switch b >> 6 {
	case 1:
		extra = 1
	case 2:
		extra = 3
	case 3:
		return false // reserved (RFC 9420, Section 2.1.2)
	}
	for range extra {
		c, err := r.ReadByte()
		if err != nil {
			return false
		}
		n = n<<8 | uint64(c)
	}
	return skip(r, int64(n))
}

func skip(r *bytes.Reader, n int64) bool {
	if int64(r.Len()) < n {
		return false
	}
	r.Seek(n, 1)
	return true
}
