package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/torpor-dev/torpor/internal/strictjson"
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
	for _, x := range indexes(in) {
		checkSendPartsAs(t, in, x, p.Message.Parts, werr)
	}
}

func checkSendPartsAs(t *testing.T, in []byte, x *bodyIndex, want []json.RawMessage, werr error) {
	got, gerr := x.sendParts(in)
	if (gerr != nil) != (werr != nil) {
		t.Fatalf("sendParts(%q): error %v, encoding/json %v", in, gerr, werr)
	}
	if werr != nil {
		return
	}
	if (got == nil) != (want == nil) || len(got) != len(want) {
		t.Fatalf("sendParts(%q) = %q, encoding/json %q", in, got, want)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("sendParts(%q) = %q, encoding/json %q", in, got, want)
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
	for _, x := range indexes(in) {
		got, gerr := x.checkedMembers(in)
		if (gerr != nil) != (werr != nil || want == nil) {
			t.Fatalf("checkedMembers(%q): error %v; encoding/json %v, %v", in, gerr, want, werr)
		}
		if gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("checkedMembers(%q) = %q, encoding/json %q", in, got, want)
		}
	}
}

// indexes are the two ways the walks read in: without an index (reading
// each value's end, copying what they return) and with the index
// ReadBody would make of in (every level; none for text that is not a
// strict object, which leaves the walks to read).
func indexes(in []byte) []*bodyIndex {
	_, spans, _ := strictjson.Index(in, nil, nil, strictjson.MaxDepth)
	return []*bodyIndex{nil, {body: in, spans: spans}}
}

var partCorpus = []string{
	`null`, `{}`, `[]`, `"p"`, `7`, `{"text":"hi"}`, `{"text":null}`, `{"text":7}`, `{"TEXT":"a","text":null}`, `{"text":"a\u00e9\n"}`,
	`{"data":{"mediaType":"application/x","wire":"AAEC"}}`, `{"data":null}`, `{"data":[1]}`, `{"Data":{},"kind":"data"}`,
	`{"kind":"data","data":{"a":1},"metadata":{"m":[1]},"filename":"f","mediaType":"m/t"}`, `{"kind":7,"data":{}}`, `{"kind":null,"data":{}}`,
	`{"mediaType":"m","object":{"x":1}}`, `{"mediatype":"m","object":{}}`, `{"mediaType":7,"object":{}}`, `{"raw":"AA==","url":"u","file":{"bytes":"x"}}`,
	`{"ᴋind":"data","data":{}}`, "{\"\u212aind\":\"data\",\"data\":{}}", `{"\u0064ata":{"k":"v"}}`, `{"filename":{"x":1},"text":"t"}`,
}

// TestCheckedPartAsDecodePart: checkedPart reads a valid part as
// DecodePart (encoding/json) does.
func TestCheckedPartAsDecodePart(t *testing.T) {
	for _, in := range partCorpus {
		if !json.Valid([]byte(in)) {
			t.Fatalf("corpus entry %q is not JSON", in)
		}
		checkPart(t, []byte(in))
	}
}

func FuzzCheckedPartAsDecodePart(f *testing.F) {
	for _, in := range partCorpus {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if json.Valid(in) {
			checkPart(t, in)
		}
	})
}

func checkPart(t *testing.T, in []byte) {
	want, werr := DecodePart(in)
	for _, x := range indexes(in) {
		got, gerr := x.checkedPart(in)
		if (gerr != nil) != (werr != nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("checkedPart(%q) = %+v, %v\nDecodePart: %+v, %v", in, got, gerr, want, werr)
		}
	}
}

// readBodyByDecoder is ReadBody as it was before its walks: encoding/json
// for the params, the parts and their data. ReadBody must answer as it
// does.
func readBodyByDecoder(b []byte) Body {
	req, err := ParseRequest(b)
	if err != nil {
		return Body{Err: err.(*RPCError)}
	}
	out := Body{Request: req, Send: IsSendMethod(req.Method)}
	if !out.Send {
		return out
	}
	var params struct {
		Message struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"message"`
	}
	if json.Unmarshal(req.Params, &params) != nil {
		out.Refusal = ObjectRejected()
		return out
	}
	members := func(b []byte) (map[string]json.RawMessage, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil || m == nil {
			return nil, errors.New("not a JSON object")
		}
		return m, nil
	}
	taken := false
	for _, raw := range params.Message.Parts {
		p, err := DecodePart(raw)
		if err != nil {
			out.Parts, out.Refusal = nil, ObjectRejected()
			return out
		}
		mt, data, err := objectPart(p, members)
		taken = taken || err == nil
		out.Parts = append(out.Parts, BodyPart{Part: p, MediaType: mt, Data: data})
	}
	if len(out.Parts) > 0 && !taken {
		out.Refusal = ObjectRejected()
	}
	return out
}

func FuzzReadBodyAsByDecoder(f *testing.F) {
	for _, part := range partCorpus {
		f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[` + part + `]}}}`))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := ReadBody(in), readBodyByDecoder(in); !reflect.DeepEqual(got, want) {
			t.Fatalf("ReadBody(%q) = %+v\nby decoder: %+v", in, got, want)
		}
	})
}
