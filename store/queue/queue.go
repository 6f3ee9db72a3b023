package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
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
	Enqueue(ctx context.Context, r Record, b queuebounds.Bounds, now time.Time) (Record, error)
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
