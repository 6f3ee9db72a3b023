package jsstore_test

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// spreadStore sends each Enqueue to the next of its stores in turn.
type spreadStore struct {
	queue.Store
	all []queue.Store
	n   *atomic.Int64
}

func spread(qs []queue.Store) spreadStore {
	return spreadStore{Store: qs[0], all: qs, n: new(atomic.Int64)}
}

func (s spreadStore) Enqueue(ctx context.Context, r queue.Record, b queuebounds.Bounds, now time.Time) (queue.Record, error) {
	return s.all[int(s.n.Add(1))%len(s.all)].Enqueue(ctx, r, b, now)
}
