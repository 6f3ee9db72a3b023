package jsstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/queue/queuetest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

const (
	ownerA = "did:key:z6MkTenantA"
	ownerB = "did:key:z6MkTenantB"
)

// queues starts one server and opens n connections to it, as n relays.
func queues(t *testing.T, n int) []*Queue {
	t.Helper()
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var qs []*Queue
	for range n {
		c, err := Open(ctx, Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		qs = append(qs, c.Queue())
	}
	return qs
}

// subjects is how many messages each subject of the records stream holds.
func subjects(t *testing.T, q *Queue) map[string]uint64 {
	t.Helper()
	info, err := q.c.records.Info(context.Background(), jetstream.WithSubjectFilter(q.c.n.recordsSubj+">"))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects
}

func mustPlace(t *testing.T, q *Queue, tenant string, want bool) {
	t.Helper()
	if moved, err := q.Place(context.Background(), queuetest.Agent, tenant); err != nil || moved != want {
		t.Fatalf("Place(%q) = %v, %v; want %v", tenant, moved, err, want)
	}
}

// drain takes every record of the agent's queue from q after *cursor,
// acknowledging them, and returns their bodies in the order served.
func drain(t *testing.T, q *Queue, cursor *uint64) []string {
	t.Helper()
	ctx := context.Background()
	var bodies []string
	for {
		rs, err := q.Next(ctx, queuetest.Agent, *cursor, 100, queuetest.T0)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			return bodies
		}
		var seqs []uint64
		for _, r := range rs {
			if r.Seq <= *cursor {
				t.Fatalf("seq %d served after %d", r.Seq, *cursor)
			}
			*cursor = r.Seq
			seqs = append(seqs, r.Seq)
			bodies = append(bodies, string(r.Body))
		}
		if err := q.Ack(ctx, queuetest.Agent, seqs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPlaceFollowedByOtherRelays: a queue moved by one relay is found by
// another whose views are from before the move (its enqueue lands on the
// tenant's subject, the seqs going on), an occupied queue moves at the
// acknowledgement that empties it, and it moves back to its default
// subject when the device leaves its tenant.
func TestPlaceFollowedByOtherRelays(t *testing.T) {
	qs := queues(t, 2)
	b := queuebounds.Default()
	legacy := qs[0].subject(queuetest.Agent)
	tenantA := qs[0].c.n.recordsSubj + suffix(queuetest.Agent, ownerA)
	var cursor uint64
	queuetest.MustEnqueue(t, qs[0], queuetest.Msg(queuetest.Alice, "1"), b, queuetest.T0)
	drain(t, qs[0], &cursor)

	mustPlace(t, qs[1], ownerA, true)
	mustPlace(t, qs[1], ownerA, false) // already there
	if r := queuetest.MustEnqueue(t, qs[0], queuetest.Msg(queuetest.Alice, "2"), b, queuetest.T0); r.Seq != 2 {
		t.Errorf("seq after the move = %d, want 2", r.Seq)
	}
	if got := subjects(t, qs[0]); got[legacy] != 1 || got[tenantA] != 1 {
		t.Errorf("subjects = %v, want the moved marker on %s and the record on %s", got, legacy, tenantA)
	}

	mustPlace(t, qs[1], "", false) // a record is live: it waits
	if got := drain(t, qs[1], &cursor); !slices.Equal(got, []string{"2"}) {
		t.Errorf("drained %q, want [2]", got)
	}
	if got := subjects(t, qs[0]); got[tenantA] != 1 || got[legacy] != 1 {
		t.Errorf("subjects after the emptying ack = %v, want one marker on each", got)
	}
	if r := queuetest.MustEnqueue(t, qs[0], queuetest.Msg(queuetest.Alice, "3"), b, queuetest.T0); r.Seq != 3 {
		t.Errorf("seq after moving back = %d, want 3", r.Seq)
	}
	if got := subjects(t, qs[0]); got[legacy] != 2 {
		t.Errorf("subjects = %v, want the record back on %s", got, legacy)
	}
	for i, q := range qs {
		if st, err := q.Stats(context.Background(), queuetest.Agent, queuetest.T0); err != nil || st.Messages != 1 {
			t.Errorf("relay %d: Stats = %+v, %v; want 1 message", i, st, err)
		}
	}
}

// TestMoveUnderConcurrentEnqueues races moves between subjects (tenant
// a, tenant b, none, a again) against enqueues from three relays: every
// enqueued record is served exactly once, in increasing seqs, and each
// move lands once the queue is drained.
func TestMoveUnderConcurrentEnqueues(t *testing.T) {
	qs := queues(t, 3)
	ctx := context.Background()
	b := queuebounds.Default()
	var mu sync.Mutex
	queued := map[string]bool{}
	var served []string
	var cursor uint64
	tenants := []string{ownerA, ownerB, "", ownerA, ownerB, ownerA}
	const perRound = 24
	for round, tenant := range tenants {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range perRound {
			wg.Go(func() {
				<-start
				body := fmt.Sprintf("r%d-%d", round, i)
				if _, err := qs[i%3].Enqueue(ctx, queuetest.Msg(queuetest.Alice, body), b, queuetest.T0); err != nil {
					t.Errorf("Enqueue(%s) = %v", body, err)
					return
				}
				mu.Lock()
				queued[body] = true
				mu.Unlock()
			})
		}
		placer := qs[round%3]
		wg.Go(func() {
			<-start
			if _, err := placer.Place(ctx, queuetest.Agent, tenant); err != nil {
				t.Errorf("Place(%q) = %v", tenant, err)
			}
		})
		close(start)
		wg.Wait()
		served = append(served, drain(t, placer, &cursor)...)
		want := placer.c.n.recordsSubj + suffix(queuetest.Agent, tenant)
		av, w, err := placer.fresh(ctx, queuetest.Agent, nil)
		if err != nil {
			t.Fatal(err)
		}
		av.mu.Unlock()
		if w.subj != want {
			t.Errorf("round %d: the queue is on %s after its drain, want %s", round, w.subj, want)
		}
	}
	checkServedOnce(t, served, queued, perRound*len(tenants))
}

// checkServedOnce checks that each of the want records queued was served,
// and none twice.
func checkServedOnce(t *testing.T, served []string, queued map[string]bool, want int) {
	t.Helper()
	seen := map[string]bool{}
	for _, s := range served {
		if seen[s] {
			t.Errorf("%s served twice", s)
		}
		seen[s] = true
	}
	for s := range queued {
		if !seen[s] {
			t.Errorf("%s queued and never served", s)
		}
	}
	if len(queued) != want {
		t.Errorf("%d records queued, want %d", len(queued), want)
	}
}

// TestBoundsExactAcrossAMove: racers from three relays take exactly the
// free slots of a queue that a fourth moves at the same time, and again
// once it is on its tenant's subject.
func TestBoundsExactAcrossAMove(t *testing.T) {
	qs := queues(t, 4)
	b := queuebounds.Default()
	b.MaxMessages = 20
	stores := []queue.Store{qs[0], qs[1], qs[2]}
	var placed bool
	var placeErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		placed, placeErr = qs[3].Place(context.Background(), queuetest.Agent, ownerA)
	}()
	count := queuetest.Race(spreadOver(stores), queuetest.Racers, func(int) queue.Record {
		return queuetest.Msg(queuetest.Alice, "racer")
	}, b)
	<-done
	if placeErr != nil {
		t.Fatal(placeErr)
	}
	if count["ok"] != 20 || count[queue.BoundMessages] != queuetest.Racers-20 {
		t.Errorf("outcomes = %v (moved first: %v), want 20 ok and %d %s", count, placed, queuetest.Racers-20, queue.BoundMessages)
	}
	if err := queuetest.CheckLive(qs[0], queuetest.Agent, b, 20); err != nil {
		t.Error(err)
	}
	var cursor uint64
	drain(t, qs[3], &cursor) // moves it if the racers came first
	tenantA := qs[0].c.n.recordsSubj + suffix(queuetest.Agent, ownerA)
	count = queuetest.Race(spreadOver(stores), queuetest.Racers, func(int) queue.Record {
		return queuetest.Msg(queuetest.Alice, "again")
	}, b)
	if count["ok"] != 20 || count[queue.BoundMessages] != queuetest.Racers-20 {
		t.Errorf("on the tenant's subject: outcomes = %v, want 20 ok and %d %s", count, queuetest.Racers-20, queue.BoundMessages)
	}
	if got := subjects(t, qs[0])[tenantA]; got < 20 {
		t.Errorf("%s holds %d messages, want the 20 records", tenantA, got)
	}
	rs, err := qs[1].Next(context.Background(), queuetest.Agent, cursor, 100, queuetest.T0)
	if err != nil || len(rs) != 20 || rs[0].Seq != cursor+1 || rs[19].Seq != cursor+20 {
		t.Errorf("Next after the move = %d records, %v; want seqs %d to %d", len(rs), err, cursor+1, cursor+20)
	}
}

// TestPurgeFindsMovedQueues: Purge takes the expired records of a queue on
// its tenant's subject, visiting the agent once.
func TestPurgeFindsMovedQueues(t *testing.T) {
	qs := queues(t, 1)
	q := qs[0]
	mustPlace(t, q, ownerA, true)
	b := queuebounds.Default()
	r := queuetest.Msg(queuetest.Alice, "soon gone")
	b.TTL = time.Minute
	queuetest.MustEnqueue(t, q, r, b, queuetest.T0)
	n, err := q.Purge(context.Background(), queuetest.T0.Add(time.Hour))
	if err != nil || n != 1 {
		t.Errorf("Purge = %d, %v; want 1", n, err)
	}
}

// spreadOver is spreadStore for this package's tests.
func spreadOver(qs []queue.Store) queue.Store { return &roundRobin{qs: qs} }

type roundRobin struct {
	queue.Store
	mu sync.Mutex
	qs []queue.Store
	i  int
}

func (s *roundRobin) Enqueue(ctx context.Context, r queue.Record, b queuebounds.Bounds, now time.Time) (queue.Record, error) {
	s.mu.Lock()
	q := s.qs[s.i%len(s.qs)]
	s.i++
	s.mu.Unlock()
	return q.Enqueue(ctx, r, b, now)
}

func (s *roundRobin) Next(ctx context.Context, agent string, after uint64, max int, now time.Time) ([]queue.Record, error) {
	return s.qs[0].Next(ctx, agent, after, max, now)
}
