//go:build integration

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// TestNATSNodeKilledUnderLoad runs the cluster as 3 nats-server processes.
// 16 senders enqueue 28 requests each through 3 relays while the server
// leading the queue stream is killed with SIGKILL after 120 queued
// answers. Every answer is 503 queued, a 503 saying nothing was queued or
// a 503 store_unconfirmed (never another answer, never silence). The killed server is started
// again and must rejoin: healthy, and a current replica of both queue
// streams. Then a second server is killed, so that the streams' quorum
// needs the restarted one, and the device drains: every request answered
// queued is delivered exactly once, one answered store_unconfirmed at most
// once, nothing else. Last, the streams
// lose their quorum (see noQuorum).
func TestNATSNodeKilledUnderLoad(t *testing.T) {
	const senders, perSender, killAt = 16, 28, 120
	f := startProcFleet(t, 3)
	dev := relaytest.Key(t, 8)
	publish(t, f.relays[0].addr, dev, device{mode: "sleep"})
	victim := procLeader(t, f, jsstore.RecordsStream)
	l := runLoad(t, f, dev, senders, perSender, killAt, victim.kill)
	if l.afterKill == 0 {
		t.Errorf("no request was queued after %s was killed", victim.name)
	}
	if err := victim.start(t); err != nil {
		t.Fatal(err)
	}
	rejoin := time.Now()
	waitRejoined(t, f, victim)
	t.Logf("%s rejoined %v after its restart", victim.name, time.Since(rejoin).Round(time.Millisecond))
	second := f.procs[0]
	if second == victim {
		second = f.procs[1]
	}
	second.kill()
	waitLeader(t, f, victim, jsstore.RecordsStream, "KV_"+jsstore.AgentsBucket)
	recs := drain(t, f.relays[1].addr, dev, true)
	checkDrained(t, recs, len(l.queued), l.queued, l.unsure)
	noQuorum(t, f, dev, victim, second)
	t.Logf("SIGKILL %s after %d queued answers; %d queued in all, %d after the kill; other answers %v; "+
		"%s restarted, %s killed, %d drained", victim.name, killAt, len(l.queued), l.afterKill, l.refused, victim.name, second.name, len(recs))
}

// load is what the senders of runLoad were told.
type load struct {
	tally
	afterKill int64 // queued answers after kill returned
}

// runLoad sends perSender requests from each of senders senders, spread
// over the relays, and calls kill once after killAt queued answers. An
// answer that is neither 503 queued nor a 503 with queued false and a
// message fails the test, as does a request that got no answer.
func runLoad(t *testing.T, f *fleet, dev *did.PrivateKey, senders, perSender, killAt int, kill func()) load {
	t.Helper()
	l := load{tally: newTally()}
	var (
		mu              sync.Mutex
		answered, after atomic.Int64
		killed          atomic.Bool
		killOnce        sync.Once
		wg              sync.WaitGroup
	)
	for s := range senders {
		tok := relaytest.Token(t, relaytest.Key(t, 2000+s), publicURL)
		wg.Go(func() {
			for i := range perSender {
				id := fmt.Sprintf("s%d-%d", s, i)
				a, err := send(f.relays[(s+i)%3].addr, dev.DID().String(), tok, body(id, 200))
				mu.Lock()
				switch {
				case err != nil:
					t.Errorf("%s: no answer: %v", id, err)
				case !l.add(id, a):
					t.Errorf("%s: answer %v %q; want 503, queued or saying nothing was queued", id, a, a.Message)
				}
				mu.Unlock()
				if err != nil || !a.Queued {
					continue
				}
				if killed.Load() {
					after.Add(1)
				}
				if answered.Add(1) == int64(killAt) {
					killOnce.Do(func() { kill(); killed.Store(true) })
				}
			}
		})
	}
	wg.Wait()
	l.afterKill = after.Load()
	return l
}

// streamInfo reads stream's info through any live server of f.
func streamInfo(t *testing.T, f *fleet, stream string) (*jetstream.StreamInfo, error) {
	t.Helper()
	var urls []string
	for _, n := range f.procs {
		urls = append(urls, n.url)
	}
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	return s.CachedInfo(), nil
}

// procLeader returns the server process that leads stream.
func procLeader(t *testing.T, f *fleet, stream string) *natsNode {
	t.Helper()
	info, err := streamInfo(t, f, stream)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range f.procs {
		if n.name == info.Cluster.Leader {
			return n
		}
	}
	t.Fatalf("stream %s is led by %q, not one of the fleet's servers", stream, info.Cluster.Leader)
	return nil
}

// waitRejoined waits until n is healthy and a current replica (or the
// leader) of both queue streams.
func waitRejoined(t *testing.T, f *fleet, n *natsNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.waitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{jsstore.RecordsStream} {
		until(t, ctx, fmt.Sprintf("%s current in %s", n.name, stream), func() bool {
			info, err := streamInfo(t, f, stream)
			if err != nil || info.Cluster == nil {
				return false
			}
			if info.Cluster.Leader == n.name {
				return true
			}
			for _, r := range info.Cluster.Replicas {
				if r.Name == n.name && r.Current && !r.Offline {
					return true
				}
			}
			return false
		})
	}
}

// waitLeader waits until every stream of streams has a leader among the
// servers still running, the quorum that includes n.
func waitLeader(t *testing.T, f *fleet, n *natsNode, streams ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, stream := range streams {
		until(t, ctx, stream+" led with "+n.name+" in its quorum", func() bool {
			info, err := streamInfo(t, f, stream)
			return err == nil && info.Cluster != nil && info.Cluster.Leader != ""
		})
	}
}

// until polls cond every 100ms until it holds, failing the test when ctx
// ends first.
func until(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// noQuorum kills the last server but up (neither up nor second), so that
// the streams have no quorum: every relay answers 503 with queued false,
// in bounded time: store_unavailable saying nothing was queued, or
// store_unconfirmed when a publish went out unanswered (a server that
// has not yet seen it lost its quorum may hold it in its log and commit
// it when the quorum is back). Then both servers are started again and
// every relay queues again; the device gets exactly the requests queued
// after the quorum came back, and an unconfirmed one at most once.
func noQuorum(t *testing.T, f *fleet, dev *did.PrivateKey, up, second *natsNode) {
	t.Helper()
	var last *natsNode
	for _, n := range f.procs {
		if n != up && n != second {
			last = n
		}
	}
	last.kill()
	tok := relaytest.Token(t, relaytest.Key(t, 2100), publicURL)
	unsure := map[string]bool{}
	for i := range 6 {
		start := time.Now()
		id := fmt.Sprint("nq", i)
		a, err := send(f.relays[i%3].addr, dev.DID().String(), tok, body(id, 10))
		switch {
		case err == nil && a.unconfirmed():
			unsure[id] = true
		case err != nil || a.status != http.StatusServiceUnavailable || a.Queued || !strings.Contains(a.Message, "nothing was queued"):
			t.Errorf("without quorum, relay %d: %v %q, %v; want 503 queued false, nothing was queued or store_unconfirmed", i%3+1, a, a.Message, err)
		}
		t.Logf("without quorum, relay %d answered %d %q in %v", i%3+1, a.status, a.Message, time.Since(start).Round(time.Millisecond))
	}
	for _, n := range []*natsNode{second, last} {
		if err := n.start(t); err != nil {
			t.Fatal(err)
		}
	}
	waitRejoined(t, f, last)
	queued := map[string]bool{}
	for i := range 3 {
		id := fmt.Sprint("back", i)
		mustQueue(t, f.relays[i].addr, dev.DID().String(), tok, body(id, 10))
		queued[id] = true
	}
	recs := drain(t, f.relays[2].addr, dev, true)
	seen := map[string]bool{}
	for _, r := range recs {
		id := recordID(t, r)
		if !(queued[id] || unsure[id]) || seen[id] {
			t.Errorf("after the quorum came back the device got %s (seq %d; answered queued %v, unconfirmed %v, seen before %v)", id, r.Seq, queued[id], unsure[id], seen[id])
		}
		seen[id] = true
	}
	for id := range queued {
		if !seen[id] {
			t.Errorf("after the quorum came back the device did not get %s, answered queued", id)
		}
	}
}
