package queuebounds

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// The forms the bounds had before this package: transport/link/wire's
// Bounds and transport/a2a's QueueBounds, as they were declared. Bounds
// must encode to the same bytes and decode from them.
type oldLink struct {
	MaxMessages       int   `cbor:"maxMessages,omitempty"`
	MaxPerPeer        int   `cbor:"maxPerPeer,omitempty"`
	MaxBytes          int64 `cbor:"maxBytes,omitempty"`
	MaxPeerBytes      int64 `cbor:"maxPeerBytes,omitempty"`
	MaxMessageSize    int64 `cbor:"maxMessageSize,omitempty"`
	TTLSec            int64 `cbor:"ttlSec,omitempty"`
	HandshakeMessages int   `cbor:"handshakeMessages,omitempty"`
	HandshakeBytes    int64 `cbor:"handshakeBytes,omitempty"`
}

type oldCard struct {
	MaxMessages              int   `json:"maxMessages"`
	MaxTotalBytes            int64 `json:"maxTotalBytes"`
	MaxPendingPerPeer        int   `json:"maxPendingPerPeer"`
	MaxPendingBytesPerPeer   int64 `json:"maxPendingBytesPerPeer"`
	TTLSeconds               int64 `json:"ttlSeconds"`
	MaxMessageBytes          int64 `json:"maxMessageBytes"`
	HandshakeReserveMessages int   `json:"handshakeReserveMessages"`
	HandshakeReserveBytes    int64 `json:"handshakeReserveBytes"`
}

func cases() []Bounds {
	d := Default()
	partial := Bounds{MaxPeerBytes: 1000, TTL: time.Hour}
	return []Bounds{d, {}, partial, {MaxMessages: 1}, d.Clamp(&partial)}
}

// TestLinkFormUnchanged: every Bounds encodes on the link to the bytes
// the link's old Bounds gave, and those bytes decode back.
func TestLinkFormUnchanged(t *testing.T) {
	for _, b := range cases() {
		old := oldLink{b.MaxMessages, b.MaxPerPeer, b.MaxBytes, b.MaxPeerBytes, b.MaxMessageSize, int64(b.TTL / time.Second), b.HandshakeMessages, b.HandshakeBytes}
		want, err := cbor.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cbor.Marshal(b)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%+v on the link = %x, %v; want %x", b, got, err, want)
		}
		var back Bounds
		if err := cbor.Unmarshal(want, &back); err != nil || back != b {
			t.Errorf("decoding %x = %+v, %v; want %+v", want, back, err, b)
		}
	}
}

// TestCardFormUnchanged: the same for the card's extension params.
func TestCardFormUnchanged(t *testing.T) {
	for _, b := range cases() {
		old := oldCard{b.MaxMessages, b.MaxBytes, b.MaxPerPeer, b.MaxPeerBytes, int64(b.TTL / time.Second), b.MaxMessageSize, b.HandshakeMessages, b.HandshakeBytes}
		want, err := json.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(b)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%+v in a card = %s, %v; want %s", b, got, err, want)
		}
		var back Bounds
		if err := json.Unmarshal(want, &back); err != nil || back != b {
			t.Errorf("decoding %s = %+v, %v; want %+v", want, back, err, b)
		}
	}
}

// TestDecodeRefuses: the card's form refuses unknown members, the link's
// duplicate keys (as the link's own decoder does).
func TestDecodeRefuses(t *testing.T) {
	var b Bounds
	if err := json.Unmarshal([]byte(`{"maxMessages":1,"extra":2}`), &b); err == nil {
		t.Error("card bounds with an unknown member decoded")
	}
	dup := []byte{0xa2, 0x6b, 'm', 'a', 'x', 'M', 'e', 's', 's', 'a', 'g', 'e', 's', 0x01, 0x6b, 'm', 'a', 'x', 'M', 'e', 's', 's', 'a', 'g', 'e', 's', 0x02}
	if err := cbor.Unmarshal(dup, &b); err == nil {
		t.Error("link bounds with a duplicate key decoded")
	}
}

// TestClamp: a request lowers each bound it names, including the per-peer
// byte bound, never raises one and never touches the handshake reserve.
func TestClamp(t *testing.T) {
	ceil := Default()
	got := ceil.Clamp(&Bounds{MaxPeerBytes: 1000, MaxBytes: 4 << 20, HandshakeBytes: 1, TTL: time.Hour})
	want := ceil
	want.MaxPeerBytes, want.TTL = 1000, time.Hour
	if got != want {
		t.Errorf("Clamp = %+v, want %+v", got, want)
	}
	if ceil.Clamp(nil) != ceil {
		t.Error("Clamp(nil) changed the ceiling")
	}
}
