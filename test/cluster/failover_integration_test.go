//go:build integration

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
)

// TestNATSNodeKilledUnderLoad: 16 senders enqueue 28 requests each
// through 3 relays while the NATS server leading the queue-state stream
// is shut down after 120 queued answers. Every request answered 503
// queued is delivered to the device exactly once, nothing else is, and
// the fleet goes on queueing on the two servers left.
func TestNATSNodeKilledUnderLoad(t *testing.T) {
	const senders, perSender, killAt = 16, 28, 120
	f := startFleet(t, 3)
	dev := testKey(t, 8)
	publish(t, f.relays[0].addr, dev, device{mode: "sleep"})
	victim := streamLeader(t, f, jsstore.StateStream)
	var (
		mu                sync.Mutex
		queued            = map[string]bool{}
		refused           = map[string]int{}
		answered, afterKl atomic.Int64
		killed            atomic.Bool
		killOnce          sync.Once
		wg                sync.WaitGroup
	)
	for s := range senders {
		tok := token(t, testKey(t, 2000+s))
		wg.Go(func() {
			for i := range perSender {
				id := fmt.Sprintf("s%d-%d", s, i)
				a, err := send(f.relays[(s+i)%3].addr, dev.DID().String(), tok, body(id, 200))
				mu.Lock()
				if err == nil && a.status == http.StatusServiceUnavailable && a.Queued {
					queued[id] = true
				} else {
					refused[fmt.Sprint(a.status, err)]++
				}
				mu.Unlock()
				if !a.Queued {
					continue
				}
				if killed.Load() {
					afterKl.Add(1)
				}
				if answered.Add(1) == killAt {
					killOnce.Do(func() { jsserver.Shutdown([]*jsserver.Server{victim}); killed.Store(true) })
				}
			}
		})
	}
	wg.Wait()
	recs := drain(t, f.relays[1].addr, dev, true)
	checkDrained(t, recs, len(queued), queued)
	if afterKl.Load() == 0 {
		t.Errorf("no request was queued after %s was shut down", victim.Name())
	}
	t.Logf("killed %s after %d queued answers; %d queued in all, %d after the kill; other answers %v; %d delivered",
		victim.Name(), killAt, len(queued), afterKl.Load(), refused, len(recs))
}

// streamLeader returns the server that leads stream.
func streamLeader(t *testing.T, f *fleet, stream string) *jsserver.Server {
	t.Helper()
	nc, err := nats.Connect(f.nats[0].URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	leader := s.CachedInfo().Cluster.Leader
	for _, n := range f.nats {
		if n.Name() == leader {
			return n
		}
	}
	t.Fatalf("stream %s is led by %q, not one of the fleet's servers", stream, leader)
	return nil
}
