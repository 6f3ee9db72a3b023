package relay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"

	"github.com/torpor-dev/torpor/store/queue"
)

// Media types of the parts the relay looks at (draft-chapman-a2a-mls-03,
// Section 7.3). The relay never decrypts; it reads only what tells a
// handshake from a message.
const (
	mediaMLSHandshake = "application/vnd.atom.mls-handshake+json;version=1"
	mediaMLSWire      = "application/vnd.atom.mls-wire+cbor;version=1"
)

// rpcRequest is what the relay reads of a JSON-RPC request body. Any field
// may be missing: the body is opaque to the queue, and a body that is not
// JSON-RPC at all is still queued as the reference does.
type rpcRequest struct {
	// call is true for a JSON-RPC 2.0 request with an id (a call, not a
	// notification): its answer can be a JSON-RPC response.
	call   bool
	id     json.RawMessage
	method string
	kind   queue.Kind
}

type rpcEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Message struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"message"`
	} `json:"params"`
}

func parseRequest(body []byte) rpcRequest {
	var env rpcEnvelope
	if json.Unmarshal(body, &env) != nil {
		return rpcRequest{}
	}
	r := rpcRequest{method: env.Method, kind: queue.KindMessage}
	if env.JSONRPC == "2.0" && env.ID != nil {
		r.call, r.id = true, env.ID
	}
	for _, p := range env.Params.Message.Parts {
		if isHandshakePart(p) {
			r.kind = queue.KindHandshake
			break
		}
	}
	return r
}

// isHandshakePart reports whether a part carries an MLS Welcome or Commit:
// an mls-handshake part, or an mls-wire part whose MLSMessage is a Welcome
// or a PublicMessage with a Commit. The media type is read from the part
// member or, for A2A v0.3 senders, from data.mediaType (Section 7.3).
func isHandshakePart(raw json.RawMessage) bool {
	var p struct {
		MediaType string `json:"mediaType"`
		Data      struct {
			MediaType string `json:"mediaType"`
			Wire      string `json:"wire"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return false
	}
	mt := p.MediaType
	if mt == "" {
		mt = p.Data.MediaType
	}
	switch mt {
	case mediaMLSHandshake:
		return true
	case mediaMLSWire:
		wire, err := base64.StdEncoding.DecodeString(p.Data.Wire)
		if err != nil {
			wire, err = base64.RawStdEncoding.DecodeString(p.Data.Wire)
		}
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
