package a2a

import (
	"encoding/json"
	"testing"
)

func TestObjectMediaType(t *testing.T) {
	tests := []struct {
		name, part, mt, reason string
	}{
		{"Governed Object", `{"data":{"mediaType":"` + MediaTypeDataObject + `","object":{}}}`, MediaTypeDataObject, ""},
		{"MLS wire, part member only", `{"mediaType":"` + MediaTypeMLSWire + `","data":{"wire":"AAE="}}`, MediaTypeMLSWire, ""},
		{"handshake, v0.3", `{"kind":"data","data":{"mediaType":"` + MediaTypeMLSHandshake + `"}}`, MediaTypeMLSHandshake, ""},
		{"bare Governed Object", `{"mediaType":"` + MediaTypeDataObject + `","object":{}}`, MediaTypeDataObject, ""},
		{"text", `{"text":"hi"}`, "", ReasonNoObject},
		{"v0.3 text", `{"kind":"text","text":"hi"}`, "", ReasonNoObject},
		{"data of another type", `{"data":{"mediaType":"application/json"}}`, "", ReasonNoObject},
		{"text claiming an object", `{"text":"hi","mediaType":"` + MediaTypeDataObject + `"}`, "", ReasonMalformed},
		{"conflict", `{"mediaType":"` + MediaTypeDataObject + `","data":{"mediaType":"` + MediaTypeMLSWire + `"}}`, "", ReasonMediaTypeConflict},
	}
	for _, tt := range tests {
		p, err := DecodePart(json.RawMessage(tt.part))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		mt, err := ObjectMediaType(p)
		reason := ""
		if pe, ok := err.(*PartError); ok {
			reason = pe.Reason()
		} else if err != nil {
			reason = err.Error()
		}
		if mt != tt.mt || reason != tt.reason {
			t.Errorf("%s: %q, %q; want %q, %q", tt.name, mt, reason, tt.mt, tt.reason)
		}
	}
}

func TestRefusal(t *testing.T) {
	send := func(params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":` + params + `}`
	}
	tests := []struct {
		name, body string
		refused    bool
	}{
		{"text only", send(`{"message":{"parts":[{"text":"hi"},{"url":"https://x.example/f"}]}}`), true},
		{"text and an object", send(`{"message":{"parts":[{"text":"hi"},{"data":{"mediaType":"` + MediaTypeDataObject + `","object":{}}}]}}`), false},
		{"no parts (od-010)", send(`{"message":{"parts":[]}}`), false},
		{"params not a message", send(`[1]`), true},
		{"a part not JSON-RPC shaped", send(`{"message":{"parts":[7]}}`), true},
		{"not a submission", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}`, false},
		{"not JSON-RPC", `one`, false},
	}
	for _, tt := range tests {
		got := Refusal([]byte(tt.body))
		if (got != nil) != tt.refused || (got != nil && (got.Code != CodeInvalidParams || got.Message != "object rejected")) {
			t.Errorf("%s: Refusal = %v, want refused %v", tt.name, got, tt.refused)
		}
	}
}
