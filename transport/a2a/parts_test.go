package a2a

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/canon"
)

const vectorDir = "../../testdata/vectors/atom"

// partVector is the encapsulation-part vector format.
type partVector struct {
	ID     string          `json:"id"`
	Kind   string          `json:"kind"`
	Expect string          `json:"expect"`
	Reason string          `json:"reason"`
	ReadAs string          `json:"readAs"`
	Part   json.RawMessage `json:"part"`
}

func loadPartVectors(tb testing.TB) []partVector {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []partVector
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var v partVector
		if err := json.Unmarshal(b, &v); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		if v.Kind == "encapsulation-part" {
			out = append(out, v)
		}
	}
	if len(out) < 8 {
		tb.Fatalf("found %d encapsulation-part vectors in %s, want 8", len(out), vectorDir)
	}
	return out
}

// readAs reads a part as the given media type through the typed reader.
func readAs(p Part, mediaType string) error {
	var err error
	switch mediaType {
	case MediaTypeDataObject:
		_, err = ReadDataObject(p)
	case MediaTypeMLSWire:
		_, err = ReadMLSWire(p)
	case MediaTypeMLSHandshake:
		_, err = ReadHandshake(p)
	default:
		_, err = ReadPart(p, mediaType)
	}
	return err
}

func TestPartVectors(t *testing.T) {
	for _, v := range loadPartVectors(t) {
		t.Run(v.ID, func(t *testing.T) {
			var p Part
			if err := json.Unmarshal(v.Part, &p); err != nil {
				t.Fatal(err)
			}
			err := readAs(p, v.ReadAs)
			if v.Expect == "accept" {
				if err != nil {
					t.Fatalf("read as %s: %v, want accept", v.ReadAs, err)
				}
				return
			}
			var pe *PartError
			if !errors.As(err, &pe) {
				t.Fatalf("read as %s: %v, want *PartError %s", v.ReadAs, err, v.Reason)
			}
			if pe.Reason() != v.Reason {
				t.Errorf("reason = %s (%v), want %s", pe.Reason(), err, v.Reason)
			}
		})
	}
}

func TestMediaTypePlacement(t *testing.T) {
	const do, wire = MediaTypeDataObject, MediaTypeMLSWire
	tests := []struct {
		name   string
		part   string
		want   string // effective media type, "" when rejected
		reason string
	}{
		{"both equal", `{"data":{"mediaType":"` + do + `"},"mediaType":"` + do + `"}`, do, ""},
		{"part only", `{"data":{},"mediaType":"` + do + `"}`, do, ""},
		{"data only (v0.3)", `{"kind":"data","data":{"mediaType":"` + do + `"}}`, do, ""},
		{"empty part member falls back", `{"data":{"mediaType":"` + do + `"},"mediaType":""}`, do, ""},
		{"empty data member ignored", `{"data":{"mediaType":""},"mediaType":"` + do + `"}`, do, ""},
		{"conflict", `{"data":{"mediaType":"` + wire + `"},"mediaType":"` + do + `"}`, "", ReasonMediaTypeConflict},
		{"conflict by case only", `{"data":{"mediaType":"Application/vnd.atom.data-object+json;version=1"},"mediaType":"` + do + `"}`, "", ReasonMediaTypeConflict},
		{"conflict by whitespace only", `{"data":{"mediaType":"application/vnd.atom.data-object+json; version=1"},"mediaType":"` + do + `"}`, "", ReasonMediaTypeConflict},
		{"absent", `{"data":{"object":{}}}`, "", ReasonMalformed},
		{"text content", `{"text":"{}","mediaType":"` + do + `"}`, "", ReasonMalformed},
		{"v0.3 text kind", `{"kind":"text","data":{"mediaType":"` + do + `"}}`, "", ReasonMalformed},
		{"data and text", `{"text":"x","data":{"mediaType":"` + do + `"}}`, "", ReasonMalformed},
		{"data not object", `{"data":"x","mediaType":"` + do + `"}`, "", ReasonMalformed},
		{"data null", `{"data":null,"mediaType":"` + do + `"}`, "", ReasonMalformed},
		{"inner media type not a string", `{"data":{"mediaType":7},"mediaType":"` + do + `"}`, "", ReasonMalformed},
		{"duplicate inner media type", `{"data":{"mediaType":"` + do + `","mediaType":"` + wire + `"},"mediaType":"` + do + `"}`, "", ReasonMalformed},
		{"raw content", `{"raw":"AAAA","mediaType":"` + do + `"}`, "", ReasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Part
			if err := json.Unmarshal([]byte(tt.part), &p); err != nil {
				t.Fatal(err)
			}
			got, _, err := MediaTypeOf(p)
			var pe *PartError
			switch {
			case tt.want != "" && (err != nil || got != tt.want):
				t.Errorf("MediaTypeOf(%s) = %q, %v; want %q", tt.part, got, err, tt.want)
			case tt.want == "" && (!errors.As(err, &pe) || pe.Reason() != tt.reason):
				t.Errorf("MediaTypeOf(%s) = %q, %v; want rejection %s", tt.part, got, err, tt.reason)
			}
		})
	}
}

func TestReadNotMatched(t *testing.T) {
	p, err := MLSWire{Wire: []byte{1, 2, 3}}.Part()
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadDataObject(p)
	var pe *PartError
	if !errors.As(err, &pe) || pe.Reason() != ReasonMediaTypeNotMatched || !errors.Is(err, ErrMediaTypeNotMatched) {
		t.Errorf("ReadDataObject(wire part) = %v, want media-type-not-matched", err)
	}
}

func TestTypedPartRules(t *testing.T) {
	alice := "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
	hs := func(data string) string {
		return `{"mediaType":"` + MediaTypeMLSHandshake + `","data":{"mediaType":"` + MediaTypeMLSHandshake + `",` + data + `}}`
	}
	wire := func(data string) string {
		return `{"mediaType":"` + MediaTypeMLSWire + `","data":{"mediaType":"` + MediaTypeMLSWire + `",` + data + `}}`
	}
	obj := func(data string) string {
		return `{"mediaType":"` + MediaTypeDataObject + `","data":{"mediaType":"` + MediaTypeDataObject + `",` + data + `}}`
	}
	tests := []struct {
		name, part, as string
		ok             bool
	}{
		{"handshake welcome and tree", hs(`"initiatorDid":"` + alice + `","welcome":"AAEC","ratchetTree":"AwQ="`), MediaTypeMLSHandshake, true},
		{"handshake commit only", hs(`"initiatorDid":"` + alice + `","commit":"AAEC","memberDids":["` + alice + `"]`), MediaTypeMLSHandshake, true},
		{"handshake welcome without tree", hs(`"initiatorDid":"` + alice + `","welcome":"AAEC"`), MediaTypeMLSHandshake, false},
		{"handshake neither", hs(`"initiatorDid":"` + alice + `","ratchetTree":"AAEC"`), MediaTypeMLSHandshake, false},
		{"handshake no initiator", hs(`"welcome":"AAEC","ratchetTree":"AAEC"`), MediaTypeMLSHandshake, false},
		{"handshake did:web initiator", hs(`"initiatorDid":"did:web:x","commit":"AAEC"`), MediaTypeMLSHandshake, false},
		{"handshake bad member DID", hs(`"initiatorDid":"` + alice + `","commit":"AAEC","memberDids":["x"]`), MediaTypeMLSHandshake, false},
		{"handshake welcome not base64", hs(`"initiatorDid":"` + alice + `","welcome":"!!","ratchetTree":"AAEC"`), MediaTypeMLSHandshake, false},
		{"wire padded", wire(`"wire":"AAECAw=="`), MediaTypeMLSWire, true},
		{"wire unpadded", wire(`"wire":"AAECAw"`), MediaTypeMLSWire, true},
		{"wire escaped", wire(`"wire":"AAEC\u0041w=="`), MediaTypeMLSWire, true},
		{"wire escaped, not base64", wire(`"wire":"AAEC\u002dw=="`), MediaTypeMLSWire, false},
		{"wire with sender", wire(`"wire":"AAECAw==","senderDid":"` + alice + `"`), MediaTypeMLSWire, true},
		{"wire url-safe alphabet", wire(`"wire":"-_-_"`), MediaTypeMLSWire, false},
		{"wire missing", wire(`"senderDid":"` + alice + `"`), MediaTypeMLSWire, false},
		{"wire empty", wire(`"wire":""`), MediaTypeMLSWire, false},
		{"wire number", wire(`"wire":7`), MediaTypeMLSWire, false},
		{"wire bad sender", wire(`"wire":"AAEC","senderDid":"did:key:zzz"`), MediaTypeMLSWire, false},
		{"object", obj(`"object":{"a":1}`), MediaTypeDataObject, true},
		{"object missing", obj(`"x":1`), MediaTypeDataObject, false},
		{"object array", obj(`"object":[1]`), MediaTypeDataObject, false},
		{"object string", obj(`"object":"{}"`), MediaTypeDataObject, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Part
			if err := json.Unmarshal([]byte(tt.part), &p); err != nil {
				t.Fatal(err)
			}
			err := readAs(p, tt.as)
			if (err == nil) != tt.ok {
				t.Errorf("read %s = %v, want ok=%v", tt.part, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrMalformedPart) {
				t.Errorf("read %s = %v, want ErrMalformedPart", tt.part, err)
			}
		})
	}
}

// TestPartRoundTrip writes each kind, marshals it in both versions' shapes,
// and reads it back.
func TestPartRoundTrip(t *testing.T) {
	alice := did.MustParse("did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG")
	bob := did.MustParse("did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf")
	w := MLSWire{Wire: []byte{0, 1, 2, 3, 250}, SenderDID: bob}
	h := Handshake{InitiatorDID: alice, Welcome: []byte{1}, RatchetTree: []byte{2, 3}, Commit: []byte{4}, MemberDIDs: []did.DID{alice, bob}, InitiatorEndpoint: "https://a.example/a2a/jsonrpc"}
	d := DataObjectPart{Object: json.RawMessage(`{"version":1,"payload":{"x":"<&>"}}`)}
	for _, v := range []string{Version10, Version03} {
		wp, err := w.Part()
		if err != nil {
			t.Fatal(err)
		}
		hp, err := h.Part()
		if err != nil {
			t.Fatal(err)
		}
		dp, err := d.Part()
		if err != nil {
			t.Fatal(err)
		}
		parts := reencode(t, []Part{wp.ForVersion(v), hp.ForVersion(v), dp.ForVersion(v)})
		if v == Version03 && (parts[0].Kind != "data" || parts[0].MediaType != "") {
			t.Errorf("v0.3 part = %+v, want kind data and no part mediaType", parts[0])
		}
		gw, err := ReadMLSWire(parts[0])
		if err != nil {
			t.Fatal(err)
		}
		gh, err := ReadHandshake(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		gd, err := ReadDataObject(parts[2])
		if err != nil {
			t.Fatal(err)
		}
		opt := cmp.Comparer(func(a, b did.DID) bool { return a == b })
		if diff := cmp.Diff(w, gw, opt); diff != "" {
			t.Errorf("%s: MLS wire (-want +got):\n%s", v, diff)
		}
		if diff := cmp.Diff(h, gh, opt); diff != "" {
			t.Errorf("%s: handshake (-want +got):\n%s", v, diff)
		}
		// Marshalling a Part with encoding/json HTML-escapes the object's
		// strings; the JSON, and so its canonical form, is unchanged.
		if got, want := mustCanon(t, gd.Object), mustCanon(t, d.Object); got != want {
			t.Errorf("%s: object = %s, want %s", v, gd.Object, d.Object)
		}
	}
}

func mustCanon(tb testing.TB, b []byte) string {
	tb.Helper()
	c, err := canon.Transform(b)
	if err != nil {
		tb.Fatal(err)
	}
	return string(c)
}

func reencode(tb testing.TB, ps []Part) []Part {
	tb.Helper()
	b, err := json.Marshal(ps)
	if err != nil {
		tb.Fatal(err)
	}
	var out []Part
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestWritersRefuseIncomplete(t *testing.T) {
	if _, err := (MLSWire{}).Part(); err == nil {
		t.Error("empty MLS wire part written")
	}
	if _, err := (Handshake{Welcome: []byte{1}, RatchetTree: []byte{1}}).Part(); err == nil {
		t.Error("handshake without initiator written")
	}
	if _, err := (DataObjectPart{Object: json.RawMessage(`[]`)}).Part(); err == nil {
		t.Error("data object part with an array written")
	}
	p, err := DataObjectPart{Object: json.RawMessage(`{"t":"<&>"}`)}.Part()
	if want := `{"mediaType":"` + MediaTypeDataObject + `","object":{"t":"<&>"}}`; err != nil || string(p.Data) != want {
		t.Errorf("DataObjectPart.Part() data = %s, %v; want %s", p.Data, err, want)
	}
}
