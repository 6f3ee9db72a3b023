package queue

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

var (
	// ErrFull is returned (as *FullError) by Enqueue when a bound would be
	// exceeded. The relay answers 507 (messages, bytes) or 429 (peer).
	ErrFull = errors.New("queue: full")
	// ErrTooLarge is returned by Enqueue when a body is longer than
	// Bounds.MaxMessageSize.
	ErrTooLarge = errors.New("queue: message too large")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("queue: store closed")
	// ErrInvalidBounds is returned (wrapped) by Enqueue and
	// Bounds.Validate when a limit is not positive.
	ErrInvalidBounds = queuebounds.ErrInvalid
	// ErrInvalidRecord is returned (wrapped) by Enqueue for a record
	// without an agent or with an unknown Kind.
	ErrInvalidRecord = errors.New("queue: invalid record")
	// ErrNoSpace is returned (wrapped) by the record log's Enqueue while
	// its file system is full: the room left is kept for acknowledgements.
	// It is syscall.ENOSPC too. Enqueue takes records again by itself
	// once there is space.
	ErrNoSpace = fmt.Errorf("queue: no space left for new records: %w", syscall.ENOSPC)
	// ErrCorrupt is returned (wrapped) when the file holds data this
	// version cannot decode (an unknown layout version or a bad record).
	ErrCorrupt = errors.New("queue: corrupt store")
	// ErrUnconfirmed is returned (wrapped) by Enqueue when the write was
	// sent but the store did not confirm it: the record may be stored,
	// now or later (a JetStream publish whose answer was lost, or that a
	// leader without quorum still holds in its log), or not at all. The
	// relay answers 503 store_unconfirmed with queued false: the profile
	// forbids claiming queued, and the answer must not say nothing was
	// queued either. A second copy of the object is dropped by the
	// device's replay cache, so a sender may send it again.
	ErrUnconfirmed = errors.New("queue: the store did not confirm the write; the record may or may not be stored")
)

// Bound names used in FullError.Kind, as the profile's "kind" member.
const (
	BoundMessages = "messages"
	BoundBytes    = "bytes"
	BoundPeer     = "peer"
)

// FullError says which bound refused an enqueue.
type FullError struct {
	// Kind is BoundMessages, BoundBytes or BoundPeer (MaxPerPeer or
	// MaxPeerBytes: the reference's vocabulary has one peer kind).
	Kind string
}

func (e *FullError) Error() string { return fmt.Sprintf("queue: full (%s)", e.Kind) }

// Unwrap returns ErrFull.
func (e *FullError) Unwrap() error { return ErrFull }
