package jsstore

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
)

// countingDialer dials TCP and counts the Write calls on its
// connections: the write(2) system calls nats.go makes.
type countingDialer struct{ writes *atomic.Int64 }

func (d countingDialer) Dial(network, addr string) (net.Conn, error) {
	c, err := net.Dial(network, addr)
	return countingConn{c, d.writes}, err
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// gateRig is a gate on its own connection, whose writes are counted, in
// front of a service on subject svc that answers only when the test says
// (reqs).
type gateRig struct {
	g      *gate
	nc     *nats.Conn
	clk    *clocktest.Clock
	writes atomic.Int64
	reqs   chan *nats.Msg
}

func newGateRig(t *testing.T) *gateRig {
	t.Helper()
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	r := &gateRig{clk: clocktest.New(time.Unix(0, 0)), reqs: make(chan *nats.Msg, 64)}
	svc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if _, err := svc.ChanSubscribe("svc", r.reqs); err != nil {
		t.Fatal(err)
	}
	if err := svc.Flush(); err != nil {
		t.Fatal(err)
	}
	if r.nc, err = nats.Connect(srv.URL(), nats.SetCustomDialer(countingDialer{&r.writes})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.nc.Close)
	if r.g, err = newGate(r.nc, r.clk); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.g.close)
	if err := r.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return r
}

type gateResult struct {
	i    int
	data string
	err  error
}

// ask sends request i (its body is i) through the gate in a goroutine of
// its own and reports its answer on out.
func (r *gateRig) ask(ctx context.Context, i int, out chan<- gateResult) {
	go func() {
		m, err := r.g.request(ctx, &nats.Msg{Subject: "svc", Data: []byte(strconv.Itoa(i))})
		res := gateResult{i: i, err: err}
		if m != nil {
			res.data = string(m.Data)
		}
		out <- res
	}()
}

// received takes n requests off the service.
func (r *gateRig) received(t *testing.T, n int) []*nats.Msg {
	t.Helper()
	var got []*nats.Msg
	for range n {
		select {
		case m := <-r.reqs:
			got = append(got, m)
		case <-time.After(10 * time.Second):
			t.Fatalf("the service received %d requests, want %d", len(got), n)
		}
	}
	return got
}

// heldUntil waits until the gate holds n publishes.
func (r *gateRig) heldUntil(n int) {
	for {
		r.g.mu.Lock()
		held := len(r.g.held)
		r.g.mu.Unlock()
		if held == n {
			return
		}
		runtime.Gosched()
	}
}

func (r *gateRig) stats() gateStats {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	return r.g.stats
}

// TestGateBatchesWhileBusy: while more than gateLow publishes are
// unanswered, the next ones are held; the answer that brings the
// unanswered ones down to gateLow sends all those held as one batch, in
// one or two writes, and every caller gets its own answer.
func TestGateBatchesWhileBusy(t *testing.T) {
	r := newGateRig(t)
	ctx := context.Background()
	out := make(chan gateResult, 32)
	const held = 8
	for i := range gateLow + 1 {
		r.ask(ctx, i, out)
	}
	first := r.received(t, gateLow+1)
	for i := range held {
		r.ask(ctx, gateLow+1+i, out)
	}
	r.heldUntil(held)
	select {
	case m := <-r.reqs:
		t.Fatalf("the service received %q while %d publishes were unanswered", m.Data, gateLow+1)
	default:
	}
	before := r.writes.Load()
	if err := first[0].Respond(first[0].Data); err != nil {
		t.Fatal(err)
	}
	batch := r.received(t, held)
	if writes := r.writes.Load() - before; writes < 1 || writes > 2 {
		t.Errorf("the batch of %d publishes took %d writes, want 1 or 2", held, writes)
	}
	if got, want := r.stats(), (gateStats{publishes: gateLow + 1 + held, batched: held, batches: 1}); got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
	for _, m := range append(first[1:], batch...) {
		if err := m.Respond(m.Data); err != nil {
			t.Fatal(err)
		}
	}
	for range gateLow + 1 + held {
		res := <-out
		if res.err != nil || res.data != strconv.Itoa(res.i) {
			t.Errorf("request %d = %q, %v; want its own answer %q", res.i, res.data, res.err, strconv.Itoa(res.i))
		}
	}
}

// TestGateHoldIsBounded: a held publish goes out gateHold after it was
// held even though no answer comes.
func TestGateHoldIsBounded(t *testing.T) {
	r := newGateRig(t)
	ctx := context.Background()
	out := make(chan gateResult, 8)
	for i := range gateLow + 1 {
		r.ask(ctx, i, out)
	}
	r.received(t, gateLow+1)
	timer := r.clk.TimerCreated()
	r.ask(ctx, 9, out)
	<-timer
	r.clk.Advance(gateHold - time.Microsecond)
	select {
	case m := <-r.reqs:
		t.Fatalf("the service received %q before gateHold", m.Data)
	default:
	}
	r.clk.Advance(time.Microsecond)
	if m := r.received(t, 1)[0]; string(m.Data) != "9" {
		t.Fatalf("the service received %q, want the held request 9", m.Data)
	}
}

// TestGateHeldNotSentWhenContextEnds: a publish whose context ends while
// it is held never leaves, and says so (errNotSent: it cannot be
// stored); one that went out unanswered says it timed out.
func TestGateHeldNotSentWhenContextEnds(t *testing.T) {
	r := newGateRig(t)
	out := make(chan gateResult, 8)
	sent, cancelSent := context.WithCancel(context.Background())
	for i := range gateLow + 1 {
		r.ask(sent, i, out)
	}
	r.received(t, gateLow+1)
	ctx, cancel := context.WithCancel(context.Background())
	r.ask(ctx, 9, out)
	r.heldUntil(1)
	cancel()
	if res := <-out; !errors.Is(res.err, errNotSent) || !errors.Is(res.err, context.Canceled) {
		t.Fatalf("held request %d: err %v, want errNotSent and context.Canceled", res.i, res.err)
	}
	if err := r.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	cancelSent()
	for range gateLow + 1 {
		if res := <-out; errors.Is(res.err, errNotSent) || !errors.Is(res.err, nats.ErrTimeout) {
			t.Errorf("sent request %d: err %v, want nats.ErrTimeout and not errNotSent", res.i, res.err)
		}
	}
	select {
	case m := <-r.reqs:
		t.Fatalf("the service received %q, cancelled while held", m.Data)
	default:
	}
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	if r.g.inflight != 0 || len(r.g.waiting) != 0 || len(r.g.held) != 0 {
		t.Errorf("after every request ended: %d unanswered, %d waiting, %d held; want none", r.g.inflight, len(r.g.waiting), len(r.g.held))
	}
}

// TestGateMessageFreeOnReturn: once request returns, the gate no longer
// reads the message, even when its context ended as its batch went out,
// so a retry may change the message's headers (publishAt does). The
// race detector (make race) sees a read after the return.
func TestGateMessageFreeOnReturn(t *testing.T) {
	r := newGateRig(t)
	out := make(chan gateResult, 8)
	for i := range gateLow + 1 {
		r.ask(context.Background(), i, out)
	}
	first := r.received(t, gateLow+1)
	const n = 200
	done := make(chan struct{}, n)
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			m := &nats.Msg{Subject: "svc", Header: nats.Header{"A": {"1"}}, Data: []byte(strconv.Itoa(i))}
			go cancel()
			_, _ = r.g.request(ctx, m)
			m.Header["A"] = []string{"2"} // what a retry's publishAt does
			done <- struct{}{}
		}()
	}
	for range 20 {
		r.clk.Advance(gateHold)
		runtime.Gosched()
	}
	for range n {
		<-done
	}
	for _, m := range first {
		if err := m.Respond(nil); err != nil {
			t.Fatal(err)
		}
	}
}
