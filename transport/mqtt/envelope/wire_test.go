package envelope

import (
	"bytes"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/governed/governedtest"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func TestCBORCarriesTheSignedObject(t *testing.T) {
	o := governedtest.Command(t, didtest.Key(t, 1), 7, t0, map[string]any{"mode": "hourly_wake", "windowSec": 600, "offsetSec": -30})
	j, _ := o.MarshalJSON()
	c, err := EncodePayload(j, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) >= len(j) {
		t.Errorf("CBOR is %d bytes, JSON %d: expected it smaller", len(c), len(j))
	}
	back, err := DecodePayload(ContentTypeCBOR, c)
	if err != nil {
		t.Fatal(err)
	}
	o2, err := governed.Parse(back)
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.VerifySignature(); err != nil {
		t.Fatalf("signature after JSON→CBOR→JSON: %v", err)
	}
	if !bytes.Equal(o.SignedBytes(), o2.SignedBytes()) {
		t.Errorf("canonical forms differ:\n%s\n%s", o.SignedBytes(), o2.SignedBytes())
	}
	// The deterministic encoding is stable: encoding again gives the
	// same bytes.
	c2, _ := EncodePayload(back, true)
	if !bytes.Equal(c, c2) {
		t.Error("re-encoding the decoded object gave different CBOR")
	}
}

func TestContentTypes(t *testing.T) {
	tests := []struct {
		ct      string
		cbor    bool
		wantErr bool
	}{
		{"", false, false},
		{"application/json", false, false},
		{"application/json; charset=utf-8", false, false},
		{"application/cbor", true, false},
		{"text/plain", false, true},
		{"application/cbor+json", false, true},
		{"garbage;;", false, true},
	}
	for _, tt := range tests {
		got, err := IsCBOR(tt.ct)
		if got != tt.cbor || (err != nil) != tt.wantErr {
			t.Errorf("IsCBOR(%q) = %v, %v; want %v, error %v", tt.ct, got, err, tt.cbor, tt.wantErr)
		}
	}
}
