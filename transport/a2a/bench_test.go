package a2a

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// benchBody is a 4 KiB MLS message submission, the shape the relay
// classifies on every request.
func benchBody() []byte {
	wire := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0, 1, 0, 2, 7}, 4<<10/5*3/4))
	return []byte(`{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"mediaType":"` +
		MediaTypeMLSWire + `","data":{"mediaType":"` + MediaTypeMLSWire + `","wire":"` + wire + `"}}]}}}`)
}

func BenchmarkParseRequest(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	meter := benchcpu.Start(b)
	for b.Loop() {
		if _, err := ParseRequest(body); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}

func BenchmarkReadBody(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	meter := benchcpu.Start(b)
	for b.Loop() {
		if r := ReadBody(body); r.Err != nil || r.Refusal != nil {
			b.Fatal(r.Err, r.Refusal)
		}
	}
	meter.Stop()
}

// BenchmarkStrictWalk is the validating walk alone: grammar, nesting and
// duplicate members.
func BenchmarkStrictWalk(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	meter := benchcpu.Start(b)
	for b.Loop() {
		if _, err := readStrict(body, nil); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}
