package jsstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/queue/queuetest"
	"github.com/torpor-dev/torpor/store/storetest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// single starts a one-server JetStream that fsyncs every write, for the
// length of the test.
func single(t *testing.T) *jsserver.Server {
	t.Helper()
	s, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{s}) })
	return s
}

// open connects to srv with one replica, checked through its monitoring
// endpoint.
func open(t *testing.T, srv *jsserver.Server) *jsstore.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := jsstore.Open(ctx, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// opener is a contract suite's newOpener over JetStream: per check, fresh
// returns how to connect for it, and every opening is a new connection
// whose store (own) closes it.
func opener[S any](fresh func(t *testing.T) func(t *testing.T) *jsstore.Conn, own func(*jsstore.Conn) S) func(t *testing.T) storetest.Opener[S] {
	return func(t *testing.T) storetest.Opener[S] {
		connect := fresh(t)
		return func(t *testing.T) S { return own(connect(t)) }
	}
}

// onSingle gives each check a fresh single server.
func onSingle(t *testing.T) func(t *testing.T) *jsstore.Conn {
	srv := single(t)
	return func(t *testing.T) *jsstore.Conn { return open(t, srv) }
}

// TestQueueContract runs the queue.Store contract suite against Queue on
// a fresh server per check; a store opened again is a new connection to
// the same server.
func TestQueueContract(t *testing.T) {
	queuetest.Run(t, opener(onSingle, (*jsstore.Conn).OwnQueue))
}

// TestRaceAcrossConnections races for the last slots through separate
// connections, as separate relays do: queuetest.Racers enqueuers spread
// over 3 connections take exactly the free slots.
func TestRaceAcrossConnections(t *testing.T) {
	srv := single(t)
	var qs []queue.Store
	for range 3 {
		c := open(t, srv)
		t.Cleanup(func() { c.Close() })
		qs = append(qs, c.Queue())
	}
	b := queuebounds.Default()
	b.MaxMessages = 20
	for i := range 5 {
		queuetest.MustEnqueue(t, qs[i%3], queuetest.Msg(queuetest.Bob, "pre"), b, queuetest.T0)
	}
	count := queuetest.Race(spread(qs), queuetest.Racers, func(i int) queue.Record {
		return queuetest.Msg(queuetest.Alice, "racer")
	}, b)
	if count["ok"] != 15 || count[queue.BoundMessages] != queuetest.Racers-15 {
		t.Errorf("outcomes = %v, want 15 ok and %d %s", count, queuetest.Racers-15, queue.BoundMessages)
	}
	if err := queuetest.CheckLive(qs[0], queuetest.Agent, b, 20); err != nil {
		t.Error(err)
	}
}

// TestPrefixSeparates: stores with different prefixes on one server share
// nothing; an invalid prefix is refused.
func TestPrefixSeparates(t *testing.T) {
	srv := single(t)
	ctx := context.Background()
	openPrefix := func(prefix string) (*jsstore.Conn, error) {
		return jsstore.Open(ctx, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL(), Prefix: prefix})
	}
	a, err := openPrefix("FLEET_A")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := openPrefix("FLEET_B")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	queuetest.MustEnqueue(t, a.Queue(), queuetest.Msg(queuetest.Alice, "a"), queuebounds.Default(), queuetest.T0)
	if st, err := b.Queue().Stats(ctx, queuetest.Agent, queuetest.T0); err != nil || st.Messages != 0 {
		t.Errorf("Stats under another prefix = %+v, %v; want empty", st, err)
	}
	if r := queuetest.MustEnqueue(t, b.Queue(), queuetest.Msg(queuetest.Alice, "b"), queuebounds.Default(), queuetest.T0); r.Seq != 1 {
		t.Errorf("first seq under another prefix = %d, want 1", r.Seq)
	}
	if _, err := openPrefix("no.dots"); err == nil {
		t.Error("Open with prefix no.dots succeeded")
	}
}

// TestFullViewReadAgainBeforeRefusing: a relay whose view of a queue is
// full from before another relay drained it reads the queue again before
// refusing, and queues.
func TestFullViewReadAgainBeforeRefusing(t *testing.T) {
	srv := single(t)
	a, b := open(t, srv), open(t, srv)
	defer a.Close()
	defer b.Close()
	qa, qb := a.Queue(), b.Queue()
	bounds := queuebounds.Default()
	bounds.MaxMessages = 3
	var seqs []uint64
	for range 3 {
		seqs = append(seqs, queuetest.MustEnqueue(t, qa, queuetest.Msg(queuetest.Alice, "x"), bounds, queuetest.T0).Seq)
	}
	if err := qb.Ack(context.Background(), queuetest.Agent, seqs); err != nil {
		t.Fatal(err)
	}
	if _, err := qa.Enqueue(context.Background(), queuetest.Msg(queuetest.Alice, "y"), bounds, queuetest.T0); err != nil {
		t.Errorf("Enqueue after another relay drained the queue = %v, want queued", err)
	}
}
