package queue

import (
	"context"
	"fmt"
	"time"
)

// Kind classifies a queued record for the bounds check.
type Kind uint8

const (
	// KindMessage is an ordinary A2A request (a Governed Object, MLS
	// application ciphertext, or anything else opaque to the relay).
	KindMessage Kind = iota
	// KindHandshake is an MLS Welcome or Commit. These records may use the
	// reserved allowance of Bounds (HandshakeMessages, HandshakeBytes) on
	// top of the ordinary limits, because a sleeping member that misses a
	// Commit falls out of its group (RFC 9420, Section 12.4).
	KindHandshake
)

// String returns "message" or "handshake".
func (k Kind) String() string {
	switch k {
	case KindMessage:
		return "message"
	case KindHandshake:
		return "handshake"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Record is one queued request for a sleeping agent.
type Record struct {
	// Seq is assigned by Enqueue: per agent, strictly increasing, never
	// reused (not even after every record was acknowledged).
	Seq uint64
	// Agent is the recipient agent's DID.
	Agent string
	// From is the sender DID proven by the DID Bearer token, never a body
	// field. The per-peer bound keys on it; an empty From skips the
	// per-peer bound (the reference does the same for a record without a
	// caller; the relay never enqueues one).
	From string
	// Kind selects the bounds that apply.
	Kind Kind
	// EnqueuedAt is set by Enqueue to its now argument.
	EnqueuedAt time.Time
	// ExpiresAt is EnqueuedAt + Bounds.TTL, set by Enqueue. The record is
	// expired iff now > ExpiresAt (strict, as the reference).
	ExpiresAt time.Time
	// Body is opaque: the raw JSON-RPC request body. The relay never
	// decrypts it.
	Body []byte
}

// Expired reports whether r is expired at now.
func (r Record) Expired(now time.Time) bool { return now.After(r.ExpiresAt) }

// Bounds limit one agent's queue. The profile's reference bounds are the
// defaults (see DefaultBounds); the relay publishes the bounds it applies
// in the agent's card.
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
	// MaxMessageSize caps one body; larger bodies get ErrTooLarge.
	MaxMessageSize int64
	// TTL is the lifetime of each record.
	TTL time.Duration
	// HandshakeMessages and HandshakeBytes are the reserved allowance for
	// KindHandshake records: such a record is checked against MaxMessages
	// + HandshakeMessages, MaxPerPeer + HandshakeMessages, MaxPeerBytes +
	// HandshakeBytes and MaxBytes + HandshakeBytes, so a queue full of ordinary messages still takes an
	// MLS Welcome or Commit. Zero means no reserve.
	HandshakeMessages int
	HandshakeBytes    int64
}

// DefaultBounds returns the profile's reference bounds (500 messages, 50
// per peer, 2 MiB, 7 days), 512 KiB per peer (a quarter of the queue, so
// one sender DID cannot fill it), a 256 KiB maximum message size and a
// reserve of 16 handshake records / 256 KiB.
func DefaultBounds() Bounds {
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

// Validate returns an error wrapping ErrInvalidBounds unless every limit
// is positive (the reserve may be zero).
func (b Bounds) Validate() error {
	switch {
	case b.MaxMessages <= 0:
		return fmt.Errorf("%w: MaxMessages %d", ErrInvalidBounds, b.MaxMessages)
	case b.MaxPerPeer <= 0:
		return fmt.Errorf("%w: MaxPerPeer %d", ErrInvalidBounds, b.MaxPerPeer)
	case b.MaxPeerBytes <= 0:
		return fmt.Errorf("%w: MaxPeerBytes %d", ErrInvalidBounds, b.MaxPeerBytes)
	case b.MaxBytes <= 0:
		return fmt.Errorf("%w: MaxBytes %d", ErrInvalidBounds, b.MaxBytes)
	case b.MaxMessageSize <= 0:
		return fmt.Errorf("%w: MaxMessageSize %d", ErrInvalidBounds, b.MaxMessageSize)
	case b.TTL <= 0:
		return fmt.Errorf("%w: TTL %v", ErrInvalidBounds, b.TTL)
	case b.HandshakeMessages < 0 || b.HandshakeBytes < 0:
		return fmt.Errorf("%w: negative handshake reserve", ErrInvalidBounds)
	}
	return nil
}

// Stats describe an agent's live (unexpired) records.
type Stats struct {
	// Messages and Bytes count every live record and its body bytes.
	Messages int
	Bytes    int64
	// Handshakes and HandshakeBytes count the KindHandshake subset.
	Handshakes     int
	HandshakeBytes int64
}

// Store is the relay's queue. It is small on purpose so that a distributed
// backend (a NATS JetStream stream per agent, with the bounds enforced in a
// KV-guarded transaction or by stream limits) can implement it later; Bolt
// is the embedded default and Log the embedded record log.
type Store interface {
	// Enqueue durably stores r (fsync'd, group-committed with concurrent
	// callers) after checking b against live (unexpired) records in the
	// same transaction, and returns r with Seq, EnqueuedAt and ExpiresAt
	// set. Returns *FullError (errors.Is ErrFull) when a bound would be
	// exceeded, ErrTooLarge when len(Body) > MaxMessageSize,
	// ErrInvalidBounds or ErrInvalidRecord for bad arguments, ErrClosed
	// after Close.
	Enqueue(ctx context.Context, r Record, b Bounds, now time.Time) (Record, error)
	// Next returns up to max live records of agent with Seq > after, in
	// Seq order. An unknown agent has no records (nil, nil). Records
	// that fail their checksum are left out and named in a *DamagedError
	// returned with the sound ones (Bolt).
	Next(ctx context.Context, agent string, after uint64, max int, now time.Time) ([]Record, error)
	// Ack deletes acknowledged records; unknown seqs are ignored.
	Ack(ctx context.Context, agent string, seqs []uint64) error
	// Purge deletes expired records of every agent and returns how many.
	Purge(ctx context.Context, now time.Time) (int, error)
	// Stats returns live count and bytes for agent.
	Stats(ctx context.Context, agent string, now time.Time) (Stats, error)
	// Close releases the store. Later calls return ErrClosed.
	Close() error
}
