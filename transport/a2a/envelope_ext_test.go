package a2a

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// TestEnvelopeMetadataRoundTrip: a chain put on a message comes back out
// of its extensions and metadata, other metadata kept; a message that does
// not list the extension presents nothing; malformed metadata is an error.
func TestEnvelopeMetadataRoundTrip(t *testing.T) {
	m := Message{MessageID: "m1", Role: "ROLE_USER", Metadata: json.RawMessage(`{"other":1}`)}
	want := EnvelopeMetadata{Passports: []string{"a.b.c", "d.e.f"}}
	if err := PresentEnvelope(&m, want); err != nil {
		t.Fatal(err)
	}
	if err := PresentEnvelope(&m, want); err != nil || len(m.Extensions) != 1 {
		t.Fatalf("presenting twice: %v, extensions %v; want the URI listed once", err, m.Extensions)
	}
	got, ok, err := PresentedEnvelope(m.Extensions, m.Metadata)
	if err != nil || !ok || !slices.Equal(got.Passports, want.Passports) {
		t.Fatalf("PresentedEnvelope = %+v, %v, %v; want %+v", got, ok, err, want)
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(m.Metadata, &meta) != nil || string(meta["other"]) != "1" {
		t.Errorf("metadata %s lost its other member", m.Metadata)
	}
	if _, ok, err := PresentedEnvelope(nil, m.Metadata); ok || err != nil {
		t.Errorf("not listed: ok %v, err %v; want nothing presented", ok, err)
	}
	for _, bad := range []string{
		``,
		`{}`,
		`{"` + ExtEnvelope + `":{"passports":[]}}`,
		`{"` + ExtEnvelope + `":{"passports":["a"],"extra":1}}`,
		`{"` + ExtEnvelope + `":{"passports":["a"],"passports":["b"]}}`,
		`{"` + ExtEnvelope + `":{"passports":["1","2","3","4","5","6","7","8","9"]}}`,
	} {
		if _, ok, err := PresentedEnvelope([]string{ExtEnvelope}, json.RawMessage(bad)); !ok || !errors.Is(err, ErrEnvelopeMetadata) {
			t.Errorf("metadata %s: ok %v, err %v; want ErrEnvelopeMetadata", bad, ok, err)
		}
	}
}
