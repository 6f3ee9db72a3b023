package queuebounds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// card is the form of the ExtQueueBounds extension's params in an agent's
// card (docs/relay.md, "Queue bounds extension"): every member present.
type card struct {
	MaxMessages       int   `json:"maxMessages"`
	MaxTotalBytes     int64 `json:"maxTotalBytes"`
	MaxPendingPerPeer int   `json:"maxPendingPerPeer"`
	// MaxPendingBytesPerPeer caps the bytes queued from one sender.
	MaxPendingBytesPerPeer   int64 `json:"maxPendingBytesPerPeer"`
	TTLSeconds               int64 `json:"ttlSeconds"`
	MaxMessageBytes          int64 `json:"maxMessageBytes"`
	HandshakeReserveMessages int   `json:"handshakeReserveMessages"`
	HandshakeReserveBytes    int64 `json:"handshakeReserveBytes"`
}

// link is the form of the bounds in the device link's frames
// (transport/link/wire): zero members are left out, a zero member of a
// device's request meaning the ceiling's.
type link struct {
	MaxMessages       int   `cbor:"maxMessages,omitempty"`
	MaxPerPeer        int   `cbor:"maxPerPeer,omitempty"`
	MaxBytes          int64 `cbor:"maxBytes,omitempty"`
	MaxPeerBytes      int64 `cbor:"maxPeerBytes,omitempty"`
	MaxMessageSize    int64 `cbor:"maxMessageSize,omitempty"`
	TTLSec            int64 `cbor:"ttlSec,omitempty"`
	HandshakeMessages int   `cbor:"handshakeMessages,omitempty"`
	HandshakeBytes    int64 `cbor:"handshakeBytes,omitempty"`
}

// linkDec refuses what the link's own decoder refuses (duplicate keys,
// nesting, large maps): the link's frames decode Bounds with it.
var linkDec = func() cbor.DecMode {
	m, err := cbor.DecOptions{DupMapKey: cbor.DupMapKeyEnforcedAPF, MaxNestedLevels: 4, MaxMapPairs: 64}.DecMode()
	if err != nil {
		panic(err)
	}
	return m
}()

// MarshalJSON returns b as the card publishes it.
func (b Bounds) MarshalJSON() ([]byte, error) {
	return json.Marshal(card{
		MaxMessages: b.MaxMessages, MaxTotalBytes: b.MaxBytes, MaxPendingPerPeer: b.MaxPerPeer,
		MaxPendingBytesPerPeer: b.MaxPeerBytes, TTLSeconds: int64(b.TTL / time.Second), MaxMessageBytes: b.MaxMessageSize,
		HandshakeReserveMessages: b.HandshakeMessages, HandshakeReserveBytes: b.HandshakeBytes,
	})
}

// UnmarshalJSON reads the card's form, refusing unknown members.
func (b *Bounds) UnmarshalJSON(p []byte) error {
	var c card
	d := json.NewDecoder(bytes.NewReader(p))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("queue bounds: trailing data")
	}
	*b = Bounds{
		MaxMessages: c.MaxMessages, MaxBytes: c.MaxTotalBytes, MaxPerPeer: c.MaxPendingPerPeer,
		MaxPeerBytes: c.MaxPendingBytesPerPeer, TTL: time.Duration(c.TTLSeconds) * time.Second, MaxMessageSize: c.MaxMessageBytes,
		HandshakeMessages: c.HandshakeReserveMessages, HandshakeBytes: c.HandshakeReserveBytes,
	}
	return nil
}

// MarshalCBOR returns b as the link carries it.
func (b Bounds) MarshalCBOR() ([]byte, error) {
	return cbor.Marshal(link{
		MaxMessages: b.MaxMessages, MaxPerPeer: b.MaxPerPeer, MaxBytes: b.MaxBytes, MaxPeerBytes: b.MaxPeerBytes,
		MaxMessageSize: b.MaxMessageSize, TTLSec: int64(b.TTL / time.Second), HandshakeMessages: b.HandshakeMessages, HandshakeBytes: b.HandshakeBytes,
	})
}

// UnmarshalCBOR reads the link's form.
func (b *Bounds) UnmarshalCBOR(p []byte) error {
	var l link
	if err := linkDec.Unmarshal(p, &l); err != nil {
		return err
	}
	*b = Bounds{
		MaxMessages: l.MaxMessages, MaxPerPeer: l.MaxPerPeer, MaxBytes: l.MaxBytes, MaxPeerBytes: l.MaxPeerBytes,
		MaxMessageSize: l.MaxMessageSize, TTL: time.Duration(l.TTLSec) * time.Second, HandshakeMessages: l.HandshakeMessages, HandshakeBytes: l.HandshakeBytes,
	}
	return nil
}
