package queue

import (
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// The engine-neutral part of Enqueue: every engine (Bolt, Log,
// store/jsstore) validates a call with Prepare and checks the bounds with
// Admit or check, on the live counts it keeps, inside whatever makes its
// check and its write one step (a bbolt transaction, the record log's
// commit under its index lock, a compare-and-swap).

// Prepare validates the arguments of an Enqueue call and returns r as a
// Store stores it: Seq zero (the store assigns it), EnqueuedAt now (UTC,
// monotonic reading stripped) and ExpiresAt EnqueuedAt + b.TTL. It
// returns the errors Enqueue documents for bad arguments (ErrInvalidBounds,
// ErrInvalidRecord, ErrTooLarge). Every Store implementation calls it, so
// that all backends refuse the same calls with the same errors.
func Prepare(r Record, b queuebounds.Bounds, now time.Time) (Record, error) {
	return prepareRecord(r, b, now)
}

// Admit applies b to a record r that would join an agent's live records,
// whose totals are live and of which fromPeer (Messages and Bytes) came
// from r.From. It returns nil when r fits and otherwise the first bound
// that refuses it, in the reference's order (messages, peer, bytes) and
// then the per-peer byte cap (a peer bound), with the handshake reserve
// for KindHandshake records. Bolt and Log check with the same rule (check)
// inside their commit; a distributed Store calls Admit on the state it then
// replaces by compare-and-swap, so the check and the write act on the
// same state.
func Admit(live Stats, fromPeer Stats, r Record, b queuebounds.Bounds) *FullError {
	c := counters{n: uint64(live.Messages), bytes: uint64(live.Bytes)}
	return check(c, peerCount{n: uint64(fromPeer.Messages), bytes: uint64(fromPeer.Bytes)}, r, b)
}

// prepareRecord validates an Enqueue call and returns the record with its
// times set (see Prepare).
func prepareRecord(r Record, b queuebounds.Bounds, now time.Time) (Record, error) {
	if err := b.Validate(); err != nil {
		return Record{}, err
	}
	if r.Agent == "" {
		return Record{}, fmt.Errorf("%w: no agent", ErrInvalidRecord)
	}
	if r.Kind > KindHandshake {
		return Record{}, fmt.Errorf("%w: %v", ErrInvalidRecord, r.Kind)
	}
	if int64(len(r.Body)) > b.MaxMessageSize {
		return Record{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(r.Body), b.MaxMessageSize)
	}
	r.Seq = 0
	r.EnqueuedAt = time.Unix(0, now.UnixNano()).UTC()
	r.ExpiresAt = r.EnqueuedAt.Add(b.TTL)
	return r, nil
}

// peerCount is what an agent's live records from one sender add up to.
type peerCount struct{ n, bytes uint64 }

// check applies the bounds in the reference's order (messages, peer,
// bytes) to the live counters, then the per-peer byte cap, which the
// reference does not have: checked last, it changes no answer of the
// reference's when it is at least MaxBytes. It is a peer bound. A
// KindHandshake record may also use the reserved allowance.
func check(c counters, fromPeer peerCount, r Record, b queuebounds.Bounds) *FullError {
	maxN, maxPeer, maxPeerBytes, maxBytes := b.MaxMessages, b.MaxPerPeer, b.MaxPeerBytes, b.MaxBytes
	if r.Kind == KindHandshake {
		maxN = satAdd(maxN, b.HandshakeMessages)
		maxPeer = satAdd(maxPeer, b.HandshakeMessages)
		maxPeerBytes = satAdd(maxPeerBytes, b.HandshakeBytes)
		maxBytes = satAdd(maxBytes, b.HandshakeBytes)
	}
	size := uint64(len(r.Body))
	switch {
	case c.n >= uint64(maxN):
		return &FullError{Kind: BoundMessages}
	case r.From != "" && fromPeer.n >= uint64(maxPeer):
		return &FullError{Kind: BoundPeer}
	case c.bytes+size > uint64(maxBytes):
		return &FullError{Kind: BoundBytes}
	case r.From != "" && fromPeer.bytes+size > uint64(maxPeerBytes):
		return &FullError{Kind: BoundPeer}
	}
	return nil
}

// satAdd adds two non-negative integers, saturating instead of overflowing.
func satAdd[T int | int64](a, b T) T {
	if s := a + b; s >= a {
		return s
	}
	return a
}
