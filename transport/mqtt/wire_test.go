package mqtt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// signedCommand signs a Governed Object shaped as runtime/manage's
// commands are: this package carries it without reading it.
func signedCommand(t testing.TB, k *did.PrivateKey, seq uint64, at time.Time, args any) *governed.Object {
	t.Helper()
	o, err := governed.Sign(k, governed.Template{IssuedAt: at, Semantic: governed.Semantic{Schema: "https://torpor.dev/schemas/mqtt/command/v1"},
		Payload: map[string]any{"device": didtest.Key(t, 2).DID().String(), "seq": seq, "op": "set-mode", "args": args},
		Purpose: "torpor:command", TTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestCBORCarriesTheSignedObject(t *testing.T) {
	o := signedCommand(t, didtest.Key(t, 1), 7, t0, map[string]any{"mode": "hourly_wake", "windowSec": 600, "offsetSec": -30})
	j, _ := o.MarshalJSON()
	c, err := encodePayload(j, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) >= len(j) {
		t.Errorf("CBOR is %d bytes, JSON %d: expected it smaller", len(c), len(j))
	}
	back, err := decodePayload(ContentTypeCBOR, c)
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
	c2, _ := encodePayload(back, true)
	if !bytes.Equal(c, c2) {
		t.Error("re-encoding the decoded object gave different CBOR")
	}
}

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
			if j, err := toJSON(b); err == nil {
				t.Errorf("toJSON(%s) = %s, want an error", tt.hex, j)
			}
		})
	}
	// What the JSON model has converts exactly.
	b, _ := hex.DecodeString("a561611903e86162f56163806164206165f93e00") // {"a":1000,"b":true,"c":[],"d":-1,"e":1.5}
	j, err := toJSON(b)
	if err != nil || string(j) != `{"a":1000,"b":true,"c":[],"d":-1,"e":1.5}` {
		t.Errorf("toJSON = %s, %v", j, err)
	}
	// -0 is a float: no CBOR integer holds it (found by FuzzCBORPayload).
	if c, err := toCBOR([]byte(`{"a":-0,"b":0}`)); err != nil || hex.EncodeToString(c) != "a26161f98000616200" {
		t.Errorf("toCBOR(-0) = %x, %v, want a26161f98000616200", c, err)
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
		got, err := isCBOR(tt.ct)
		if got != tt.cbor || (err != nil) != tt.wantErr {
			t.Errorf("isCBOR(%q) = %v, %v; want %v, error %v", tt.ct, got, err, tt.cbor, tt.wantErr)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"dev-9", "a", "Pi_Zero.2", "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a/b", "+", "#", "dev 9", "$SYS", "é", strings.Repeat("x", 129)} {
		if err := CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", bad)
		}
	}
	for _, bad := range []string{"", "/a", "a//b", "a/+", "$share/x", "a/"} {
		if err := CheckPrefix(bad); err == nil {
			t.Errorf("CheckPrefix(%q) = nil, want an error", bad)
		}
	}
	got := Topics{Device: "dev-9"}
	want := []string{"torpor/v1/dev-9/cmd", "torpor/v1/dev-9/reply", "torpor/v1/dev-9/status", "torpor/v1/dev-9/event", "torpor/v1/dev-9/sync"}
	if d := cmp.Diff(want, []string{got.Command(), got.Reply(), got.Status(), got.Event(), got.Sync()}); d != "" {
		t.Errorf("topics (-want +got):\n%s", d)
	}
}

func TestOrderBatch(t *testing.T) {
	a, b := didtest.Key(t, 1), didtest.Key(t, 3)
	mk := func(k *did.PrivateKey, seq uint64, at time.Duration) *Delivery {
		return &Delivery{Object: signedCommand(t, k, seq, t0.Add(at*time.Second), nil), Seq: seq}
	}
	bad := &Delivery{Err: Reject("malformed", "x")}
	// Operator a's commands arrive 3, 1, 2; b's 2, 1; one junk message.
	in := []*Delivery{mk(a, 3, 3), mk(b, 20, 5), mk(a, 1, 1), bad, mk(a, 2, 2), mk(b, 10, 0)}
	var got []string
	for _, p := range orderBatch(in) {
		if p.Object == nil {
			got = append(got, "bad")
			continue
		}
		name := "a"
		if p.Object.Issuer == b.DID() {
			name = "b"
		}
		got = append(got, name+"-"+itoa(p.Seq))
	}
	want := []string{"bad", "b-10", "a-1", "a-2", "a-3", "b-20"}
	if !cmp.Equal(got, want) {
		t.Errorf("orderBatch = %v, want %v", got, want)
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// FuzzCBORPayload checks that any CBOR toJSON accepts converts back
// (toCBOR) to an item that converts to the same JSON: the conversion loses
// nothing.
func FuzzCBORPayload(f *testing.F) {
	o := signedCommand(f, didtest.Key(f, 1), 7, t0, map[string]any{"mode": "sleep"})
	j, _ := o.MarshalJSON()
	c, _ := toCBOR(j)
	f.Add(c)
	f.Add([]byte{0xa1, 0x61, 0x61, 0x01})
	f.Add([]byte{0xa1, 0x61, 0x61, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := toJSON(b)
		if err != nil {
			return
		}
		c, err := toCBOR(j)
		if err != nil {
			t.Fatalf("toCBOR(%s): %v", j, err)
		}
		j2, err := toJSON(c)
		if err != nil || !bytes.Equal(j, j2) {
			t.Fatalf("round trip: %s → %s, %v", j, j2, err)
		}
	})
}
