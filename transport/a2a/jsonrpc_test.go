package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name string
		in   string
		code int // 0: accepted
		id   string
	}{
		{"numeric id", `{"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{}}`, 0, "1"},
		{"string id", `{"jsonrpc":"2.0","method":"message/send","id":"a","params":[]}`, 0, `"a"`},
		{"null id", `{"jsonrpc":"2.0","method":"x","id":null}`, 0, "null"},
		{"notification", `{"jsonrpc":"2.0","method":"x"}`, 0, ""},
		{"not JSON", `{"jsonrpc":`, CodeParseError, ""},
		{"array (batch)", `[{"jsonrpc":"2.0","method":"x","id":1}]`, CodeInvalidRequest, ""},
		{"version 1.0", `{"jsonrpc":"1.0","method":"x","id":1}`, CodeInvalidRequest, ""},
		{"no version", `{"method":"x","id":1}`, CodeInvalidRequest, ""},
		{"method number", `{"jsonrpc":"2.0","method":7,"id":1}`, CodeInvalidRequest, ""},
		{"empty method", `{"jsonrpc":"2.0","method":"","id":1}`, CodeInvalidRequest, ""},
		{"object id", `{"jsonrpc":"2.0","method":"x","id":{}}`, CodeInvalidRequest, ""},
		{"bool id", `{"jsonrpc":"2.0","method":"x","id":true}`, CodeInvalidRequest, ""},
		{"string params", `{"jsonrpc":"2.0","method":"x","id":1,"params":"p"}`, CodeInvalidRequest, ""},
		{"duplicate method", `{"jsonrpc":"2.0","method":"a","method":"b","id":1}`, CodeInvalidRequest, ""},
		{"duplicate deep inside params", `{"jsonrpc":"2.0","method":"x","id":1,"params":{"message":{"parts":[{"a":1,"b":{"c":1,"c":2}}]}}}`, CodeInvalidRequest, ""},
		{"duplicate spelt with an escape", `{"jsonrpc":"2.0","method":"x","id":1,"params":{"message":{},"m\u0065ssage":{}}}`, CodeInvalidRequest, ""},
		{"duplicate among many members", `{"jsonrpc":"2.0","method":"x","id":1,"params":{` + manyMembers(40) + `,"k7":0}}`, CodeInvalidRequest, ""},
		{"many distinct members", `{"jsonrpc":"2.0","method":"x","id":1,"params":{` + manyMembers(40) + `}}`, 0, "1"},
		{"same name in sibling objects", `{"jsonrpc":"2.0","method":"x","id":1,"params":[{"a":1},{"a":1}]}`, 0, "1"},
		{"string that looks like members", `{"jsonrpc":"2.0","method":"x","id":"\"method\":1,\"method\":2","params":{"a":"{\"b\":1,\"b\":1}"}}`, 0, `"\"method\":1,\"method\":2"`},
		{"nested MaxDepth", `{"jsonrpc":"2.0","method":"x","id":1,"params":` + nest(MaxDepth-1) + `}`, 0, "1"},
		{"nested deeper than MaxDepth", `{"jsonrpc":"2.0","method":"x","id":1,"params":` + nest(MaxDepth) + `}`, CodeInvalidRequest, ""},
		{"id out of float64 range", `{"jsonrpc":"2.0","method":"x","id":1e400}`, CodeInvalidRequest, ""},
		{"negative id out of range", `{"jsonrpc":"2.0","method":"x","id":-1e400}`, CodeInvalidRequest, ""},
		{"large id within range", `{"jsonrpc":"2.0","method":"x","id":1e300}`, 0, "1e300"},
		{"array id", `{"jsonrpc":"2.0","method":"x","id":[1]}`, CodeInvalidRequest, ""},
		{"null", `null`, CodeInvalidRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequest([]byte(tt.in))
			if tt.code == 0 {
				if err != nil || string(r.ID) != tt.id {
					t.Fatalf("ParseRequest = %+v, %v; want id %s", r, err, tt.id)
				}
				return
			}
			var e *RPCError
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Fatalf("ParseRequest = %v, want code %d", err, tt.code)
			}
		})
	}
}

// TestSendMessageReferenceShape parses the reference's SendMessage request
// (as the reference implementation sends it, see testdata/vectors/SOURCE.md)
// and the v0.3 message/send form of the offline vectors.
func TestSendMessageReferenceShape(t *testing.T) {
	v10 := `{"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{"message":{
	  "messageId":"m-1","role":"ROLE_USER","contextId":"mls:did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG",
	  "extensions":[],
	  "parts":[{"data":{"mediaType":"application/vnd.atom.mls-wire+cbor;version=1","wire":"AAEC","senderDid":"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"},
	            "mediaType":"application/vnd.atom.mls-wire+cbor;version=1"}]},
	 "configuration":{}}}`
	v03 := `{"jsonrpc":"2.0","method":"message/send","id":"x","params":{"message":{"kind":"message","messageId":"m-2","role":"user",
	  "parts":[{"kind":"data","data":{"mediaType":"application/vnd.atom.mls-wire+cbor;version=1","wire":"AAEC"}}]}}}`
	for _, in := range []string{v10, v03} {
		r, err := ParseRequest([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseSendMessage(r)
		if err != nil {
			t.Fatal(err)
		}
		w, err := ReadMLSWire(p.Message.Parts[0])
		if err != nil || len(w.Wire) != 3 {
			t.Errorf("%s: wire part = %+v, %v", r.Method, w, err)
		}
	}
	r, _ := ParseRequest([]byte(`{"jsonrpc":"2.0","method":"tasks/get","id":1,"params":{}}`))
	var e *RPCError
	if _, err := ParseSendMessage(r); !errors.As(err, &e) || e.Code != CodeMethodNotFound {
		t.Errorf("ParseSendMessage(tasks/get) = %v, want method not found", err)
	}
	r, _ = ParseRequest([]byte(`{"jsonrpc":"2.0","method":"SendMessage","id":1,"params":{"message":{"parts":[]}}}`))
	if _, err := ParseSendMessage(r); !errors.As(err, &e) || e.Code != CodeInvalidParams {
		t.Errorf("ParseSendMessage(empty message) = %v, want invalid params", err)
	}
}

func TestNewSendMessageAndResponses(t *testing.T) {
	p, _ := MLSWire{Wire: []byte{1}}.Part()
	m := NewUserMessage("m1", "", p)
	for _, v := range []string{Version10, Version03} {
		req, err := NewSendMessage(json.RawMessage("7"), v, m)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(req)
		back, err := ParseRequest(b)
		if err != nil {
			t.Fatalf("%s: ParseRequest(own request) = %v", v, err)
		}
		params, err := ParseSendMessage(back)
		if err != nil {
			t.Fatalf("%s: ParseSendMessage(own request) = %v", v, err)
		}
		if wantRole := map[string]string{Version10: RoleUser, Version03: RoleUser03}[v]; params.Message.Role != wantRole {
			t.Errorf("%s: role %q, want %q", v, params.Message.Role, wantRole)
		}
	}
	res, err := NewResult(nil, map[string]string{"ok": "yes"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if diff := cmp.Diff(`{"jsonrpc":"2.0","id":null,"result":{"ok":"yes"}}`, string(b)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	b, _ = json.Marshal(NewError(json.RawMessage(`"a"`), &RPCError{Code: CodeInvalidParams, Message: "Invalid params"}))
	if diff := cmp.Diff(`{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"Invalid params"}}`, string(b)); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

// TestNewSendResult: A2A 1.0 clients read the message of a SendMessage
// result from its "message" member (SendMessageResponse); 0.3 clients get
// the message itself with kind "message".
func TestNewSendResult(t *testing.T) {
	m := Message{MessageID: "ack", Role: RoleAgent, Parts: []Part{{Text: ptrTo("accepted")}}}
	for v, want := range map[string]string{
		Version10: `{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"ack","role":"ROLE_AGENT","parts":[{"text":"accepted"}]}}}`,
		Version03: `{"jsonrpc":"2.0","id":1,"result":{"kind":"message","messageId":"ack","role":"agent","parts":[{"kind":"text","text":"accepted"}]}}`,
	} {
		r, err := NewSendResult(json.RawMessage(`1`), v, m)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		if string(b) != want {
			t.Errorf("%s:\n got %s\nwant %s", v, b, want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// manyMembers returns n members "k0":0, "k1":0, … (past the walk's switch
// from a list to a set of names).
func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	return b.String()
}

// nest returns n nested objects: {"a":{"a":…{}…}}.
func nest(n int) string {
	return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1)
}
