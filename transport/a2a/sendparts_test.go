package a2a

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var sendPartsCorpus = []string{
	`{}`, `null`, `[]`, `[1]`, `"s"`, `1`, `true`, ` { } `,
	`{"message":null}`, `{"message":{}}`, `{"message":{"parts":null}}`, `{"message":{"parts":[]}}`,
	`{"message":{"parts":[1, "a" ,{"b":[2,{"c":"]}"}]},null,true,-1.5e3]}}`,
	` { "message" : { "parts" : [ 1 , 2 ] , "x" : { "parts" : 7 } } , "y" : [ ] } `,
	`{"message":{"parts":{}}}`, `{"message":{"parts":"x"}}`, `{"message":{"parts":7}}`, `{"message":[]}`, `{"message":"m"}`, `{"message":1}`,
	`{"Message":{"PARTS":[1]}}`, `{"MESSAGE":{"Parts":[1]},"message":{"parts":[2]}}`, `{"message":{"parts":[1]},"Message":{}}`,
	`{"message":{"parts":[1]},"Message":{"parts":null}}`, `{"message":{"parts":[1]},"Message":null}`, `{"message":"x","Message":{"parts":[1]}}`,
	`{"meſſage":{"partſ":[1]}}`, `{"\u006dessage":{"p\u0061rts":[3]}}`, "{\"message\xff\":{\"parts\":[1]}}", `{"messages":{"parts":[1]}}`,
	`{"message":{"parts":[1],"parts2":[2]},"other":{"message":{"parts":[9]}}}`, `{"a\"message":{"parts":[1]}}`,
}

// TestSendPartsAsUnmarshal: sendParts gives what encoding/json gives for
// the params of a submission.
func TestSendPartsAsUnmarshal(t *testing.T) {
	for _, in := range sendPartsCorpus {
		checkSendParts(t, []byte(in))
	}
}

func FuzzSendPartsAsUnmarshal(f *testing.F) {
	for _, in := range sendPartsCorpus {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // sendParts reads only what ParseRequest validated
		}
		checkSendParts(t, in)
	})
}

func checkSendParts(t *testing.T, in []byte) {
	var p struct {
		Message struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"message"`
	}
	werr := json.Unmarshal(in, &p)
	got, gerr := sendParts(in)
	if (gerr != nil) != (werr != nil) {
		t.Fatalf("sendParts(%q): error %v, encoding/json %v", in, gerr, werr)
	}
	if werr != nil {
		return
	}
	if (got == nil) != (p.Message.Parts == nil) || len(got) != len(p.Message.Parts) {
		t.Fatalf("sendParts(%q) = %q, encoding/json %q", in, got, p.Message.Parts)
	}
	for i := range got {
		if !bytes.Equal(got[i], p.Message.Parts[i]) {
			t.Fatalf("sendParts(%q) = %q, encoding/json %q", in, got, p.Message.Parts)
		}
	}
}

// TestCheckedMembersAsUnmarshal: checkedMembers gives what json.Unmarshal
// into a map gives, for valid JSON.
func TestCheckedMembersAsUnmarshal(t *testing.T) {
	for _, in := range append(sendPartsCorpus, `{"a":1,"b":"x\"}","c":[1,{"d":null}],"\u0065":true,"e\u0301":{}}`, ` {"x" : "y" } `, "{\"f\xff\":1,\"f\xfe\":2}") {
		if !json.Valid([]byte(in)) {
			t.Fatalf("corpus entry %q is not JSON", in)
		}
		checkMembers(t, []byte(in))
	}
}

func FuzzCheckedMembersAsUnmarshal(f *testing.F) {
	for _, in := range sendPartsCorpus {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if json.Valid(in) {
			checkMembers(t, in)
		}
	})
}

func checkMembers(t *testing.T, in []byte) {
	var want map[string]json.RawMessage
	werr := json.Unmarshal(in, &want)
	got, gerr := checkedMembers(in)
	if (gerr != nil) != (werr != nil || want == nil) {
		t.Fatalf("checkedMembers(%q): error %v; encoding/json %v, %v", in, gerr, want, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("checkedMembers(%q) = %q, encoding/json %q", in, got, want)
	}
}
