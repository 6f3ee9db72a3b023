// Package queuebounds holds the queue bounds of one agent: the one type
// the relay's queue store applies (store/queue), the device link carries
// (transport/link/wire: hello, state, state-ok) and the agent's card
// publishes (transport/a2a's ExtQueueBounds extension). It is a leaf that
// both sides import, so a bound has one shape from the relay's
// configuration to the store and to the device.
//
// The link and the card carry the bounds in their own member names (the
// card's are the published extension's, docs/relay.md "Queue bounds
// extension"), with the TTL in whole seconds: Bounds implements
// encoding/json's and fxamacker/cbor's (un)marshalers for those two forms
// (codec.go). In Go, TTL is a time.Duration, so that a store and the
// conformance vectors may use TTLs below a second.
package queuebounds

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalid is returned (wrapped) by Validate when a limit is not
// positive. store/queue names it ErrInvalidBounds.
var ErrInvalid = errors.New("queue: invalid bounds")

// Bounds limit one agent's queue. The profile's reference bounds are the
// defaults (see Default); the relay publishes the bounds it applies in the
// agent's card.
type Bounds struct {
	// MaxMessages caps the live records of the agent.
	MaxMessages int
	// MaxPerPeer caps the live records of the agent from one sender DID.
	MaxPerPeer int
	// MaxPeerBytes caps the body bytes of the agent's live records from
	// one sender DID, so that one sender cannot fill MaxBytes alone.
	MaxPeerBytes int64
	// MaxBytes caps the sum of the live records' body lengths (raw bytes).
	MaxBytes int64
	// MaxMessageSize caps one body.
	MaxMessageSize int64
	// TTL is the lifetime of each record. The link and the card carry it
	// in whole seconds (Published).
	TTL time.Duration
	// HandshakeMessages and HandshakeBytes are the reserved allowance for
	// MLS Welcome and Commit records: such a record is checked against
	// MaxMessages + HandshakeMessages, MaxPerPeer + HandshakeMessages,
	// MaxPeerBytes + HandshakeBytes and MaxBytes + HandshakeBytes, so a
	// queue full of ordinary messages still takes an MLS Welcome or
	// Commit. Zero means no reserve.
	HandshakeMessages int
	HandshakeBytes    int64
}

// Default returns the profile's reference bounds (500 messages, 50 per
// peer, 2 MiB, 7 days), 512 KiB per peer (a quarter of the queue, so one
// sender DID cannot fill it), a 256 KiB maximum message size and a
// reserve of 16 handshake records / 256 KiB.
func Default() Bounds {
	return Bounds{
		MaxMessages:       500,
		MaxPerPeer:        50,
		MaxPeerBytes:      512 << 10,
		MaxBytes:          2 << 20,
		MaxMessageSize:    256 << 10,
		TTL:               7 * 24 * time.Hour,
		HandshakeMessages: 16,
		HandshakeBytes:    256 << 10,
	}
}

// Validate returns an error wrapping ErrInvalid unless every limit is
// positive (the reserve may be zero).
func (b Bounds) Validate() error {
	switch {
	case b.MaxMessages <= 0:
		return fmt.Errorf("%w: MaxMessages %d", ErrInvalid, b.MaxMessages)
	case b.MaxPerPeer <= 0:
		return fmt.Errorf("%w: MaxPerPeer %d", ErrInvalid, b.MaxPerPeer)
	case b.MaxPeerBytes <= 0:
		return fmt.Errorf("%w: MaxPeerBytes %d", ErrInvalid, b.MaxPeerBytes)
	case b.MaxBytes <= 0:
		return fmt.Errorf("%w: MaxBytes %d", ErrInvalid, b.MaxBytes)
	case b.MaxMessageSize <= 0:
		return fmt.Errorf("%w: MaxMessageSize %d", ErrInvalid, b.MaxMessageSize)
	case b.TTL <= 0:
		return fmt.Errorf("%w: TTL %v", ErrInvalid, b.TTL)
	case b.HandshakeMessages < 0 || b.HandshakeBytes < 0:
		return fmt.Errorf("%w: negative handshake reserve", ErrInvalid)
	}
	return nil
}

// Clamp returns the bounds in force when a device asks for req under the
// ceiling b: each limit of req is taken when it is positive and below the
// ceiling's, else the ceiling's. The handshake reserve is always the
// ceiling's: it is what keeps a sleeping member in its MLS groups. A device
// computes the same to sign its card before it publishes; a nil req gives
// b.
func (b Bounds) Clamp(req *Bounds) Bounds {
	if req == nil {
		return b
	}
	out := b
	out.MaxMessages = lower(out.MaxMessages, req.MaxMessages)
	out.MaxPerPeer = lower(out.MaxPerPeer, req.MaxPerPeer)
	out.MaxBytes = lower(out.MaxBytes, req.MaxBytes)
	out.MaxPeerBytes = lower(out.MaxPeerBytes, req.MaxPeerBytes)
	out.MaxMessageSize = lower(out.MaxMessageSize, req.MaxMessageSize)
	out.TTL = lower(out.TTL, req.TTL)
	return out
}

// lower returns v when it is positive and below ceil, else ceil.
func lower[T int | int64 | time.Duration](ceil, v T) T {
	if v > 0 && v < ceil {
		return v
	}
	return ceil
}

// Published returns b as the link and the card carry it: the TTL
// truncated to whole seconds. Comparing a card's bounds with the ones in
// force compares Published forms.
func (b Bounds) Published() Bounds {
	b.TTL = b.TTL.Truncate(time.Second)
	return b
}
