package jsstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/torpor-dev/torpor/clock"
)

// The queue's publishes (publishAt) go through a gate that sends them in
// batches while the server is busy with earlier ones, so that they reach
// it in fewer, larger writes. A relay's publishes arrive one at a time,
// each carried by its own HTTP request; written as they come, nearly
// every one is a write(2) of its own and a read of its own in the
// server, which costs the server more CPU per message than the same
// messages arriving together (docs/scale-out.md, "Fewer, larger
// writes").
//
// A publish goes out at once while at most gateLow of the connection's
// earlier publishes are unanswered; otherwise it is held. The held ones
// go out together, one after another into nats.go's buffer, which its
// flusher writes at once: when an answer brings the unanswered ones down
// to gateLow, or gateHold after the first of them was held, whichever
// comes first (one timer per batch, none per publish). The stream stores
// a connection's messages in the order they arrive, so a publish held
// while gateLow or more of the relay's publishes are still ahead of it in
// the server waits mostly for the time it would have waited there; the
// wait is bounded by gateHold all the same. With no publish unanswered
// (a quiet relay) nothing is held.
//
// Nothing else changes: each publish is the same request, with its own
// reply subject and expected last subject sequence, answered on its own.
// The replies come on one subscription of the gate's (as nats.go's own
// requests do on its), so that the gate knows which are unanswered.
const (
	gateLow  = 2
	gateHold = 5 * time.Millisecond
)

// errNotSent marks a publish that its context ended while the gate held
// it: it never left the relay, so it cannot be stored.
var errNotSent = errors.New("jsstore: the publish was not sent")

// gate sends the queue's publishes in batches (see above) and matches
// their replies.
type gate struct {
	nc     *nats.Conn
	clk    clock.Clock
	prefix string // the reply subjects' prefix: prefix + token
	done   chan struct{}
	closer sync.Once

	mu       sync.Mutex // guards all following fields
	next     uint64
	waiting  map[string]*pending // by reply token, held or unanswered
	inflight int                 // sent and unanswered
	held     []*pending
	stop     chan struct{} // closed when the held batch goes out
	stats    gateStats
}

// gateStats counts what the gate did, for the tests.
type gateStats struct {
	publishes int // publishes sent
	batched   int // of them, sent in a batch that began with a held one
	batches   int // batches that began with a held publish
}

// pending is one publish through the gate.
type pending struct {
	msg   *nats.Msg
	token string
	done  chan reply // buffered: the answer, or the error of sending
}

type reply struct {
	msg *nats.Msg
	err error
}

// newGate subscribes to the reply subjects of the gate's publishes on nc.
func newGate(nc *nats.Conn, clk clock.Clock) (*gate, error) {
	g := &gate{nc: nc, clk: clk, prefix: nc.NewInbox() + ".", done: make(chan struct{}), waiting: map[string]*pending{}}
	if _, err := nc.Subscribe(g.prefix+"*", g.answer); err != nil {
		return nil, fmt.Errorf("jsstore: subscribing to the publishes' replies: %w", err)
	}
	return g, nil
}

// close ends the timers of held batches; the connection's close ends the
// subscription.
func (g *gate) close() { g.closer.Do(func() { close(g.done) }) }

// request publishes m through the gate with a reply subject of its own
// and returns the reply. A reply that says nobody received m is
// nats.ErrNoResponders. If ctx ends while m is held, the error wraps
// errNotSent and ctx's.
func (g *gate) request(ctx context.Context, m *nats.Msg) (*nats.Msg, error) {
	p := &pending{msg: m, done: make(chan reply, 1)}
	g.mu.Lock()
	g.next++
	p.token = strconv.FormatUint(g.next, 36)
	m.Reply = g.prefix + p.token
	g.waiting[p.token] = p
	g.held = append(g.held, p)
	if g.inflight <= gateLow {
		g.sendLocked()
	} else if len(g.held) == 1 {
		g.stop = make(chan struct{})
		go g.holdFor(g.stop, g.clk.NewTimer(gateHold))
	}
	g.mu.Unlock()
	select {
	case r := <-p.done:
		return g.result(r)
	case <-ctx.Done():
	}
	if !g.forget(p) {
		return nil, fmt.Errorf("%w: %w", errNotSent, ctx.Err())
	}
	select {
	case r := <-p.done: // answered meanwhile
		return g.result(r)
	default:
		return nil, fmt.Errorf("%w: %w", nats.ErrTimeout, ctx.Err())
	}
}

func (g *gate) result(r reply) (*nats.Msg, error) {
	if r.err != nil {
		return nil, r.err
	}
	if len(r.msg.Data) == 0 && r.msg.Header.Get("Status") == "503" {
		return nil, nats.ErrNoResponders
	}
	return r.msg, nil
}

// sendLocked publishes the held ones, one after another into nats.go's
// buffer, whose flusher then writes them at once, and counts them
// unanswered. It runs under mu, so that a publish that forget finds gone
// from the held ones is in nats.go's buffer already: its message is no
// longer read once request returns.
func (g *gate) sendLocked() {
	n := len(g.held)
	g.stats.publishes += n
	if g.stop != nil {
		g.stats.batched += n
		g.stats.batches++
		close(g.stop)
		g.stop = nil
	}
	for _, p := range g.held {
		if err := g.nc.PublishMsg(p.msg); err != nil {
			delete(g.waiting, p.token)
			p.done <- reply{err: err}
			continue
		}
		g.inflight++
	}
	g.held = nil
}

// holdFor sends the held batch whose stop channel is stop when t fires,
// unless it went out before.
func (g *gate) holdFor(stop chan struct{}, t clock.Timer) {
	select {
	case <-t.C():
	case <-stop:
		t.Stop()
		return
	case <-g.done:
		t.Stop()
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stop == stop {
		g.sendLocked()
	}
}

// answer is the subscription's handler: it hands a reply to its publish
// and sends the held batch when the unanswered ones are down to gateLow.
func (g *gate) answer(m *nats.Msg) {
	token := m.Subject[min(len(g.prefix), len(m.Subject)):]
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.waiting[token]; p != nil {
		delete(g.waiting, token)
		g.inflight--
		p.done <- reply{msg: m}
	}
	if g.inflight <= gateLow && len(g.held) > 0 {
		g.sendLocked()
	}
}

// forget takes p out of the gate. It reports false if p was still held
// (it will never be sent), true if p went to nats.go (answered, failed or
// unanswered).
func (g *gate) forget(p *pending) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, h := range g.held {
		if h == p {
			g.held = append(g.held[:i], g.held[i+1:]...)
			delete(g.waiting, p.token)
			if len(g.held) == 0 && g.stop != nil {
				close(g.stop) // nothing left for its timer
				g.stop = nil
			}
			return false
		}
	}
	if g.waiting[p.token] == p {
		delete(g.waiting, p.token)
		g.inflight--
	}
	return true
}
