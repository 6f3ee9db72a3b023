package wire

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// TestLastResortMembersCompatible: the last-resort members round-trip, and
// a peer of the same version that predates them (a frame type without
// them) decodes the frames, ignoring them.
func TestLastResortMembersCompatible(t *testing.T) {
	kp := []byte{0, 1, 0, 5, 9}
	frames := []*Frame{
		{T: FrameState, ID: 1, State: &State{Mode: "sleep", KeyPackages: [][]byte{{0, 1, 0, 5, 1}}, LastResort: kp}},
		{T: FrameStateOK, ID: 1, Held: &Held{Digests: [][]byte{}, LastResort: KeyPackageDigest(kp)}},
	}
	for _, f := range frames {
		b, err := Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%s) = %v", f.T, err)
		}
		if diff := cmp.Diff(f, got); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", f.T, diff)
		}
		var old struct {
			V     int    `cbor:"v"`
			T     string `cbor:"t"`
			State *struct {
				Mode        string   `cbor:"mode"`
				KeyPackages [][]byte `cbor:"keyPackages,omitempty"`
			} `cbor:"state,omitempty"`
			Held *struct {
				Digests [][]byte `cbor:"digests"`
			} `cbor:"held,omitempty"`
		}
		if err := decMode.Unmarshal(b, &old); err != nil || old.V != Version {
			t.Errorf("a peer without the last-resort members: decoding %s = %v", f.T, err)
		}
	}
}

func TestFrameVersionAndDecoding(t *testing.T) {
	b, err := Encode(&Frame{T: FramePull, ID: 3, After: 9, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Decode(b)
	if err != nil || f.T != FramePull || f.After != 9 || f.Max != 10 || f.ID != 3 {
		t.Fatalf("decode(encode(pull)) = %+v, %v", f, err)
	}
	bad := []struct {
		name string
		b    []byte
	}{
		{"not cbor", []byte{0xff, 0x00}},
		{"version 1 (before the handshake proof)", mustEnc(t, map[string]any{"v": 1, "t": "pull"})},
		{"version 3", mustEnc(t, map[string]any{"v": 3, "t": "pull"})},
		{"duplicate key", []byte{0xa2, 0x61, 'v', 0x02, 0x61, 'v', 0x02}},
	}
	for _, tt := range bad {
		if _, err := Decode(tt.b); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: Decode = %v, want ErrProtocol", tt.name, err)
		}
	}
}

func mustEnc(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := encMode.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func FuzzDecodeFrame(f *testing.F) {
	for _, fr := range []*Frame{
		{T: FramePull, ID: 1, After: 2, Max: 3},
		{T: FrameRecords, ID: 1, Records: []Record{{Seq: 1, From: "did:key:z", Body: []byte("b")}}, More: true},
		{T: FrameState, ID: 2, State: &State{Mode: "sleep", Window: &Window{Minute: 3, LengthSec: 300}, KeyPackages: [][]byte{{1}}, ReplaceKeyPackages: true}},
		{T: FrameChallenge, Challenge: &Challenge{Nonce: make([]byte, NonceSize), Origin: "https://relay.example", Time: 1}},
		{T: FrameProof, Proof: make([]byte, 64)},
	} {
		b, _ := Encode(fr)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := Decode(b)
		if err != nil {
			return
		}
		b2, err := Encode(fr)
		if err != nil {
			t.Fatal(err)
		}
		fr2, err := Decode(b2)
		if err != nil {
			t.Fatalf("re-decoding an encoded frame: %v", err)
		}
		if diff := cmp.Diff(fr, fr2); diff != "" {
			t.Errorf("frame changed across encode/decode:\n%s", diff)
		}
	})
}

// checkOldDeviceDecodes checks that a device that predates a state-ok's
// later members decodes b, a state-ok with bounds of MaxMessages 1,
// without error and with its bounds.
func checkOldDeviceDecodes(t *testing.T, b []byte) {
	t.Helper()
	var old struct {
		V      int                 `cbor:"v"`
		T      string              `cbor:"t"`
		Bounds *queuebounds.Bounds `cbor:"bounds,omitempty"`
	}
	if err := decMode.Unmarshal(b, &old); err != nil || old.Bounds == nil || old.Bounds.MaxMessages != 1 {
		t.Errorf("a device without the member: decoding = %+v, %v", old, err)
	}
}

// TestWakeSecondMemberCompatible: a state-ok's wake second round-trips,
// second 0 included, a state-ok without it decodes as nil (a relay that
// predates it), and a device that predates it decodes the frame.
func TestWakeSecondMemberCompatible(t *testing.T) {
	for _, sec := range []int{0, 37, 59} {
		f := &Frame{T: FrameStateOK, ID: 3, Bounds: &queuebounds.Bounds{MaxMessages: 1}, WakeSecond: &sec}
		b, err := Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil || got.WakeSecond == nil || *got.WakeSecond != sec {
			t.Fatalf("state-ok with wake second %d decodes to %v, %v", sec, got.WakeSecond, err)
		}
		checkOldDeviceDecodes(t, b)
	}
	b, err := Encode(&Frame{T: FrameStateOK, ID: 3, Bounds: &queuebounds.Bounds{}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Decode(b); err != nil || got.WakeSecond != nil {
		t.Errorf("state-ok without a wake second decodes to %v, %v; want nil", got.WakeSecond, err)
	}
}

// TestHeldDigest: a Held's digest does not depend on the order of its
// digests, and changes with any of them, with their number and with the
// last resort.
func TestHeldDigest(t *testing.T) {
	a, b, c := KeyPackageDigest([]byte("a")), KeyPackageDigest([]byte("b")), KeyPackageDigest([]byte("c"))
	base := HeldDigest(&Held{Digests: [][]byte{a, b}})
	if !bytes.Equal(base, HeldDigest(&Held{Digests: [][]byte{b, a}})) {
		t.Error("the order of the digests changed the Held's digest")
	}
	for name, h := range map[string]*Held{
		"another digest":   {Digests: [][]byte{a, c}},
		"one more":         {Digests: [][]byte{a, b, c}},
		"one less":         {Digests: [][]byte{a}},
		"none":             {Digests: [][]byte{}},
		"a last resort":    {Digests: [][]byte{a, b}, LastResort: c},
		"b as last resort": {Digests: [][]byte{a}, LastResort: b},
	} {
		if bytes.Equal(base, HeldDigest(h)) {
			t.Errorf("%s: the same digest", name)
		}
	}
}

func TestPingEvery(t *testing.T) {
	tests := []struct {
		v    string
		want time.Duration
	}{
		{"", PingInterval},
		{"50", 50 * time.Second},
		{"45", 45 * time.Second},
		{"10", PingInterval},          // shorter than the relay pings anyway
		{"0", PingInterval},           // likewise
		{"3600", MaxPingInterval},     // longer than a relay grants
		{"99999999999", PingInterval}, // not a 32-bit number of seconds
		{"-60", PingInterval},
		{"1e2", PingInterval},
		{" 60", PingInterval},
	}
	for _, tt := range tests {
		if got := PingEvery(tt.v); got != tt.want {
			t.Errorf("PingEvery(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
