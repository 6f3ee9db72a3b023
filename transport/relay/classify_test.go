package relay

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/store/queue"
)

// publicMessage builds the start of an MLSMessage PublicMessage (RFC 9420,
// Section 6.2) up to the content type.
func publicMessage(groupID []byte, senderType byte, contentType byte) []byte {
	b := []byte{0, 1, 0, 1}
	b = append(b, byte(len(groupID)))
	b = append(b, groupID...)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 9) // epoch
	b = append(b, senderType)
	if senderType == 1 || senderType == 2 {
		b = append(b, 0, 0, 0, 2)
	}
	b = append(b, 0) // authenticated_data
	return append(b, contentType, 0xaa, 0xbb)
}

func TestIsHandshakeMessage(t *testing.T) {
	long := []byte{0, 1, 0, 1, 0x40, 70}
	long = append(long, make([]byte, 70)...)
	long = append(long, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 3)
	tests := []struct {
		name string
		b    []byte
		want bool
	}{
		{"member commit", publicMessage([]byte("grp"), 1, 3), true},
		{"new member commit", publicMessage([]byte("grp"), 4, 3), true},
		{"external proposal", publicMessage([]byte("grp"), 2, 2), false},
		{"application", publicMessage([]byte("grp"), 1, 1), false},
		{"two-byte group id length", long, true},
		{"welcome", []byte{0, 1, 0, 3, 1, 2, 3}, true},
		{"private message", []byte{0, 1, 0, 2, 3, 'g', 'r', 'p'}, false},
		{"key package", []byte{0, 1, 0, 5}, false},
		{"other version", []byte{0, 2, 0, 3}, false},
		{"truncated", publicMessage([]byte("grp"), 1, 3)[:10], false},
		{"reserved varint", []byte{0, 1, 0, 1, 0xc0, 0}, false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		if got := isHandshakeMessage(tt.b); got != tt.want {
			t.Errorf("isHandshakeMessage(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestParseRequestKind(t *testing.T) {
	wire := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	tests := []struct {
		name string
		body string
		call bool
		kind queue.Kind
	}{
		{"handshake part v1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"data":{},"mediaType":"application/vnd.atom.mls-handshake+json;version=1"}]}}}`, true, queue.KindHandshake},
		{"handshake part v0.3", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[{"kind":"data","data":{"mediaType":"application/vnd.atom.mls-handshake+json;version=1"}}]}}}`, true, queue.KindHandshake},
		{"wire commit", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"data":{"mediaType":"application/vnd.atom.mls-wire+cbor;version=1","wire":"` + wire(publicMessage([]byte("g"), 1, 3)) + `"}}]}}}`, true, queue.KindHandshake},
		{"wire application", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"data":{"mediaType":"application/vnd.atom.mls-wire+cbor;version=1","wire":"` + wire(publicMessage([]byte("g"), 1, 1)) + `"}}]}}}`, true, queue.KindMessage},
		{"governed object", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"data":{"object":{}},"mediaType":"application/vnd.atom.data-object+json;version=1"}]}}}`, true, queue.KindMessage},
		{"notification", `{"jsonrpc":"2.0","method":"message/send","params":{}}`, false, queue.KindMessage},
	}
	for _, tt := range tests {
		r := parseRequest([]byte(tt.body))
		if r.call != tt.call || r.kind != tt.kind || r.invalid != nil {
			t.Errorf("%s: call %v kind %v invalid %v, want %v %v", tt.name, r.call, r.kind, r.invalid, tt.call, tt.kind)
		}
	}
}

// TestParseRequestInvalid: what the agent would read another way, or not
// at all, is invalid (never a handshake, never stored), and its id is not
// kept for the answer (JSON-RPC 2.0 Section 5: id null).
func TestParseRequestInvalid(t *testing.T) {
	hs := `{"data":{},"mediaType":"application/vnd.atom.mls-handshake+json;version=1"}`
	tests := []struct{ name, body, why string }{
		{"not json", `one`, "Parse error"},
		{"method twice", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","method":"SendMessage","params":{"message":{"parts":[` + hs + `]}}}`, `duplicate member "method"`},
		{"parts twice", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[],"parts":[` + hs + `]}}}`, `duplicate member "parts"`},
		{"escaped duplicate", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[` + hs + `],"p\u0061rts":[]}}}`, `duplicate member "parts"`},
		{"nested too deep", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`, "nested deeper than 64"},
		{"id out of range", `{"jsonrpc":"2.0","id":1e400,"method":"SendMessage","params":{}}`, "number outside the IEEE 754 double range"},
		{"id object", `{"jsonrpc":"2.0","id":{"a":1},"method":"SendMessage","params":{}}`, "id must be"},
		{"id array", `{"jsonrpc":"2.0","id":[1],"method":"SendMessage","params":{}}`, "id must be"},
		{"no method", `{"jsonrpc":"2.0","id":1,"params":{}}`, "method must be"},
	}
	for _, tt := range tests {
		r := parseRequest([]byte(tt.body))
		if r.invalid == nil || !strings.Contains(r.invalid.Message, tt.why) || r.id != nil || r.call || r.kind != queue.KindMessage {
			t.Errorf("%s: invalid %v id %s call %v kind %v, want an error with %q", tt.name, r.invalid, r.id, r.call, r.kind, tt.why)
		}
	}
}
