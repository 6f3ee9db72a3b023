package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
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
		if _, _, err := readStrict(body, nil, nil, 0); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}

// objectBody is a SendMessage request with one data part holding an
// object shaped as a Governed Object (envelope, payload with text of pad
// bytes, signature), unsigned: ReadBody reads it as the relay does.
func objectBody(tb testing.TB, pad int) []byte {
	obj := `{"id":"urn:uuid:6a1f0c5e-2d3b-4c1a-9e8f-0b1c2d3e4f50","issuer":"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",` +
		`"issuedAt":"2026-12-05T17:00:00Z","expiresAt":"2026-12-05T18:00:00Z","purpose":"comms:message",` +
		`"semantic":{"schema":"https://torpor.dev/schemas/bench/v1"},"payload":{"text":"` + strings.Repeat("x", pad) + `"},` +
		`"proof":{"type":"Ed25519Signature2020","verificationMethod":"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",` +
		`"signature":"` + strings.Repeat("A", 86) + `"}}`
	p, err := DataObjectPart{Object: json.RawMessage(obj)}.Part()
	if err != nil {
		tb.Fatal(err)
	}
	req, err := NewSendMessage(json.RawMessage(`1`), Version10, NewUserMessage("m-1", "", p))
	if err != nil {
		tb.Fatal(err)
	}
	b, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkReadBodyObject reads a SendMessage of one Governed Object of
// about 1 KiB, the answer path's body (test/relay BenchmarkAnswerPath),
// reporting its allocations: the body's parts and data alias it.
func BenchmarkReadBodyObject(b *testing.B) {
	body := objectBody(b, 560)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	meter := benchcpu.Start(b)
	for b.Loop() {
		if r := ReadBody(body); r.Err != nil || r.Refusal != nil || len(r.Parts) != 1 || r.Parts[0].MediaType != MediaTypeDataObject {
			b.Fatal(r.Err, r.Refusal)
		}
	}
	meter.Stop()
}
