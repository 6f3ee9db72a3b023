package agents

import (
	"time"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// BoundsField is State.Bounds as every agents store persists it (bbolt
// here, store/jsstore in JetStream): MaxMessages, MaxPerPeer, MaxBytes,
// MaxMessageSize, TTL in nanoseconds, HandshakeMessages and
// HandshakeBytes, in this order. MaxPeerBytes came later and is a member
// of its own (zero in a state stored before it existed). The layout is
// that of the files already written; this is its only encoder and
// decoder.
type BoundsField [7]int64

// NewBoundsField returns b's stored form and its MaxPeerBytes.
func NewBoundsField(b queuebounds.Bounds) (BoundsField, int64) {
	return BoundsField{int64(b.MaxMessages), int64(b.MaxPerPeer), b.MaxBytes, b.MaxMessageSize, int64(b.TTL), int64(b.HandshakeMessages), b.HandshakeBytes},
		b.MaxPeerBytes
}

// Bounds returns the bounds f and peerBytes stored.
func (f BoundsField) Bounds(peerBytes int64) queuebounds.Bounds {
	return queuebounds.Bounds{MaxMessages: int(f[0]), MaxPerPeer: int(f[1]), MaxBytes: f[2], MaxMessageSize: f[3], TTL: time.Duration(f[4]),
		HandshakeMessages: int(f[5]), HandshakeBytes: f[6], MaxPeerBytes: peerBytes}
}
