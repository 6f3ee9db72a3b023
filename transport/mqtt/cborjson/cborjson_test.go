package cborjson

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

func TestToJSONRefusesWhatJSONCannotHold(t *testing.T) {
	tests := []struct {
		name string
		hex  string // CBOR
	}{
		{"not a map", "83010203"},
		{"integer key", "a10102"},
		{"byte string", "a1616142cafe"},
		{"tag", "a16161c11a514b67b0"},
		{"undefined", "a16161f7"},
		{"NaN", "a16161f97e00"},
		{"infinity", "a16161f97c00"},
		{"duplicate key", "a2616101616102"},
		{"indefinite length", "bf616101ff"},
		{"trailing bytes", "a161610100"},
		{"invalid UTF-8", "a16161 62c328"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := hex.DecodeString(strings.ReplaceAll(tt.hex, " ", ""))
			if err != nil {
				t.Fatal(err)
			}
			if j, err := ToJSON(b); err == nil {
				t.Errorf("ToJSON(%s) = %s, want an error", tt.hex, j)
			}
		})
	}
	// What the JSON model has converts exactly.
	b, _ := hex.DecodeString("a561611903e86162f56163806164206165f93e00") // {"a":1000,"b":true,"c":[],"d":-1,"e":1.5}
	j, err := ToJSON(b)
	if err != nil || string(j) != `{"a":1000,"b":true,"c":[],"d":-1,"e":1.5}` {
		t.Errorf("ToJSON = %s, %v", j, err)
	}
	// -0 is a float: no CBOR integer holds it (found by FuzzCBORPayload).
	if c, err := ToCBOR([]byte(`{"a":-0,"b":0}`)); err != nil || hex.EncodeToString(c) != "a26161f98000616200" {
		t.Errorf("ToCBOR(-0) = %x, %v, want a26161f98000616200", c, err)
	}
}

// FuzzCBORPayload checks that any CBOR ToJSON accepts converts back
// (ToCBOR) to an item that converts to the same JSON: the conversion loses
// nothing.
func FuzzCBORPayload(f *testing.F) {
	c, _ := ToCBOR([]byte(`{"payload":{"args":{"mode":"sleep"},"op":"set-mode","seq":7},"ttlSeconds":86400,"x":-0.5}`))
	f.Add(c)
	f.Add([]byte{0xa1, 0x61, 0x61, 0x01})
	f.Add([]byte{0xa1, 0x61, 0x61, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := ToJSON(b)
		if err != nil {
			return
		}
		c, err := ToCBOR(j)
		if err != nil {
			t.Fatalf("ToCBOR(%s): %v", j, err)
		}
		j2, err := ToJSON(c)
		if err != nil || !bytes.Equal(j, j2) {
			t.Fatalf("round trip: %s → %s, %v", j, j2, err)
		}
	})
}
