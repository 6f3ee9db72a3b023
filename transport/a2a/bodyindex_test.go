package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
)

// TestReadBodyCopiesNothing: ReadBody's Body aliases the body it read
// (the id, the params, the part and its data members), and what it
// allocates does not grow with the body: a Governed Object of 8 KiB costs
// the same bytes as one of 256: no allocation proportional to the body
// beyond the one copy the relay stores.
func TestReadBodyCopiesNothing(t *testing.T) {
	small, large := objectBody(t, 256), objectBody(t, 8<<10)
	r := ReadBody(large)
	if r.Err != nil || r.Refusal != nil || len(r.Parts) != 1 || r.Parts[0].MediaType != MediaTypeDataObject {
		t.Fatalf("ReadBody = %+v", r)
	}
	for name, v := range map[string][]byte{"id": r.Request.ID, "params": r.Request.Params, "data": r.Parts[0].Part.Data, "object": r.Parts[0].Data["object"]} {
		if !within(v, large) {
			t.Errorf("%s is a copy, not the body's bytes", name)
		}
	}
	perCall := func(body []byte) uint64 {
		const n = 200
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			ReadBody(body)
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / n
	}
	perCall(large) // the pools filled
	s, l := perCall(small), perCall(large)
	t.Logf("allocated per ReadBody: %d B (%d B body), %d B (%d B body)", s, len(small), l, len(large))
	if l > s+256 {
		t.Errorf("ReadBody allocates %d B for a %d B body, %d B for a %d B one", l, len(large), s, len(small))
	}
}

// within reports whether v lies inside b's memory.
func within(v, b []byte) bool {
	for i := range b {
		if len(v) > 0 && &b[i] == &v[0] {
			return i+len(v) <= len(b)
		}
	}
	return false
}

var stringEndCorpus = []string{`""`, `"a"`, `"\""`, `"\\"`, `"a\\\""`, `"\\\\"`, `"\\\"\\"`, `"x\"y\"z"`, `"\u0022"`, `"é\"😀"`, `"\/\b\f\n\r\t"`}

// TestStringEnd: stringEnd finds the quote that closes a valid string,
// whatever escaped quotes and reverse solidi it holds, with more text
// after it.
func TestStringEnd(t *testing.T) {
	for _, s := range stringEndCorpus {
		checkStringEnd(t, []byte(s))
	}
}

func FuzzStringEnd(f *testing.F) {
	for _, s := range stringEndCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(checkStringEnd)
}

func checkStringEnd(t *testing.T, s []byte) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' || !json.Valid(s) { // one string, no space around it
		return
	}
	for _, after := range []string{"", `,"x\""]`, `:"\\"}`} {
		if got := stringEnd(append(bytes.Clone(s), after...), 0); got != len(s)-1 {
			t.Fatalf("stringEnd(%q + %q) = %d, want %d", s, after, got, len(s)-1)
		}
	}
}

// TestUnquoteKnownStrings: a known string reads as encoding/json reads
// it, and so does one that is not known or is escaped.
func TestUnquoteKnownStrings(t *testing.T) {
	for _, want := range []string{"2.0", MethodSendMessage, MethodSendStreamingMessage, MethodMessageSend, MethodMessageStream,
		MediaTypeDataObject, MediaTypeMLSWire, MediaTypeMLSHandshake, MediaTypeEncryptedDataObject, "2.1", "SendMessageX", "é"} {
		raw, _ := json.Marshal(want)
		for _, raw := range []json.RawMessage{raw, json.RawMessage(`"\u00` + fmt.Sprintf("%02x", want[0]) + want[1:] + `"`)} {
			var got, dec string
			if err := UnquoteString(raw, &got); err != nil {
				t.Fatalf("UnquoteString(%s): %v", raw, err)
			}
			if err := json.Unmarshal(raw, &dec); err != nil {
				t.Fatal(err)
			}
			if got != dec {
				t.Errorf("UnquoteString(%s) = %q, want %q", raw, got, dec)
			}
		}
	}
	// What is not a string leaves s as json.Unmarshal leaves it.
	for _, raw := range []json.RawMessage{json.RawMessage(`null`), json.RawMessage(`5`), json.RawMessage(`{}`)} {
		got, dec := "kept", "kept"
		gotErr, decErr := UnquoteString(raw, &got), json.Unmarshal(raw, &dec)
		if got != dec || (gotErr == nil) != (decErr == nil) {
			t.Errorf("UnquoteString(%s) = %q, %v; json.Unmarshal gives %q, %v", raw, got, gotErr, dec, decErr)
		}
	}
}
