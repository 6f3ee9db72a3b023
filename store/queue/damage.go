package queue

import (
	"context"
	"fmt"
)

// DamagedError is returned by Bolt.Next together with the records it
// returns: the records it names failed their checksum or could not be
// decoded, and were left out (never served: a device would take a
// damaged body for a malformed message, acknowledge it and lose it). The
// records returned are sound. It wraps ErrCorrupt, so a caller that
// treats every error as a failure fails closed.
type DamagedError struct {
	Agent string
	// Seqs are the damaged records' seqs, in order.
	Seqs []uint64
	// First is the first damaged record's decoding error.
	First error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("queue: %d damaged record(s) of %s left out (seqs %v): %v", len(e.Seqs), e.Agent, e.Seqs, e.First)
}

// Unwrap returns ErrCorrupt.
func (e *DamagedError) Unwrap() error { return ErrCorrupt }

// AckCounter is a Store whose acknowledgement reports how many records it
// deleted. The relay uses it to tell an acknowledgement of records it
// delivered that deletes nothing (a damaged store: the records stay and
// are delivered again) from one that deleted them. Bolt implements it.
type AckCounter interface {
	// AckCount is Ack that also returns how many distinct records it
	// deleted.
	AckCount(ctx context.Context, agent string, seqs []uint64) (int, error)
}

var _ AckCounter = (*Bolt)(nil)
