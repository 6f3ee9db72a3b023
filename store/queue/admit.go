package queue

import (
	"time"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

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
// for KindHandshake records. Bolt checks with the same rule inside its
// write transaction; a distributed Store calls Admit on the state it then
// replaces by compare-and-swap, so the check and the write act on the
// same state.
func Admit(live Stats, fromPeer Stats, r Record, b queuebounds.Bounds) *FullError {
	c := counters{n: uint64(live.Messages), bytes: uint64(live.Bytes)}
	return check(c, peerCount{n: uint64(fromPeer.Messages), bytes: uint64(fromPeer.Bytes)}, r, b)
}
