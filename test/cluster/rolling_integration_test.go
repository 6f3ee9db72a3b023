//go:build integration

package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// relinkBound is how long a device whose relay was restarted may take to
// link again through another: noticing the closed link, one dial through
// the balancer, the link handshake.
const relinkBound = 5 * time.Second

// rollBound is the queue bound of TestRollingRestart's relays, four times
// the default's 500 messages (and bytes to match).
var rollBound = []string{"--max-messages", "2000", "--max-bytes", "8388608"}

// TestRollingRestart restarts the 3 relays of a fleet one at a time (as
// docs/scale-out.md's rolling upgrade does: out of the balancer, SIGTERM,
// start again, back in) while 64 senders send to 8 sleeping devices that
// stay linked and drain what is queued for them as it comes. Every answer
// is 503: queued, saying nothing was queued, or store_unconfirmed; every
// request answered queued is delivered exactly once (after dedup by seq),
// one answered store_unconfirmed at most once, nothing else; every device
// whose relay stopped links again through another within relinkBound.
//
// The devices' queues hold rollBound messages, not the default 500: at
// about 1,000 requests a second over 8 devices, 500 fill in 4 s, and on
// two shared cores one pull of a restarted fleet has taken 3 s (the
// slowest drain is logged), after which 507 asleep_queue_full, a right
// answer, is what the senders got. The bounds are tested in store/queue;
// this test is about what a restart loses.
func TestRollingRestart(t *testing.T) {
	const senders, devices, between = 64, 8, 300
	f := startFleet(t, 3, rollBound...)
	rot := newRotation(f, rollBound...)
	devs := make([]*rollDevice, devices)
	ctx, cancel := context.WithCancel(context.Background())
	var dwg sync.WaitGroup
	for i := range devs {
		devs[i] = &rollDevice{key: relaytest.Key(t, 0x5000+i), got: map[uint64]string{}}
		publish(t, f.relays[i%3].addr, devs[i].key, device{mode: "sleep"})
		dwg.Go(func() { devs[i].run(ctx, rot, int64(i)) })
	}
	l := startRollLoad(t, rot, devs, senders)
	start := time.Now()
	for i := range 3 {
		l.waitQueued(t, between)
		rot.restart(t, i)
	}
	l.waitQueued(t, between)
	rolled := time.Since(start)
	l.stop()
	cancel()
	dwg.Wait()
	checkRolled(t, f, l, devs)
	var relinks []time.Duration
	for _, d := range devs {
		relinks = append(relinks, d.relinks...)
	}
	slices.Sort(relinks)
	for _, r := range relinks {
		if r > relinkBound {
			t.Errorf("a device took %v to link again, more than %v", r, relinkBound)
		}
	}
	var slowest time.Duration
	for _, d := range devs {
		slowest = max(slowest, d.slowest)
	}
	t.Logf("rolled 3 relays in %v under %d senders: %d queued, %v; relay restarts %v; %d relinks: %v; slowest drain %v",
		rolled.Round(time.Millisecond), senders, len(l.queued), l.refused, rot.restarts, len(relinks), relinks,
		slowest.Round(time.Millisecond))
	if len(relinks) == 0 {
		t.Error("no device lost its link: the restarts did not reach the devices")
	}
}

// rotation is the fleet's balancer: it spreads requests over the relays
// in rotation and can take one out, waiting for its requests in flight.
type rotation struct {
	f        *fleet
	args     []string
	mu       sync.Mutex
	cond     *sync.Cond
	out      [3]bool
	inflight [3]int
	restarts []string
}

func newRotation(f *fleet, extra ...string) *rotation {
	var urls []string
	for _, s := range f.nats {
		urls = append(urls, s.URL())
	}
	r := &rotation{f: f, args: jetstreamArgs(urls, extra)}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// pick returns the address of a relay in rotation, starting from n, and
// the func that ends the request sent to it.
func (r *rotation) pick(n int) (string, func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range 3 {
		i := (n + k) % 3
		if !r.out[i] {
			r.inflight[i]++
			return r.f.relays[i].addr, func() {
				r.mu.Lock()
				r.inflight[i]--
				r.cond.Broadcast()
				r.mu.Unlock()
			}
		}
	}
	panic("every relay is out of rotation")
}

// restart takes relay i out of rotation, waits for its requests in flight,
// stops it (SIGTERM), starts it again on the same data directory and puts
// it back.
func (r *rotation) restart(t *testing.T, i int) {
	t.Helper()
	r.mu.Lock()
	r.out[i] = true
	for r.inflight[i] > 0 {
		r.cond.Wait()
	}
	old := r.f.relays[i]
	r.mu.Unlock()
	begin := time.Now()
	if err := old.Stop(); err != nil {
		t.Errorf("relay %d did not stop cleanly on SIGTERM: %v", i+1, err)
	}
	stopped := time.Since(begin)
	nr := startRelay(t, old.Dir, r.args...)
	r.mu.Lock()
	r.f.relays[i], r.out[i] = nr, false
	r.restarts = append(r.restarts, fmt.Sprintf("relay %d stopped in %v, serving again after %v",
		i+1, stopped.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond)))
	r.mu.Unlock()
}

// rollDevice is a sleeping device that stays linked through the balancer
// and drains what is queued for it, linking again when its link closes.
type rollDevice struct {
	key     *did.PrivateKey
	mu      sync.Mutex
	got     map[uint64]string // seq → request id, every record received
	twice   []string          // seqs received with two different ids
	relinks []time.Duration   // from a link's close to the next link
	slowest time.Duration     // the longest Drain
	errs    []error
}

func (d *rollDevice) run(ctx context.Context, rot *rotation, n int64) {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	var down time.Time
	for ctx.Err() == nil {
		addr, done := rot.pick(r.IntN(3))
		done() // a link is not a request the balancer waits for
		c, err := link.Dial(ctx, link.Config{RelayURL: addr, Audience: publicURL, Key: d.key})
		if err != nil {
			if ctx.Err() == nil {
				d.note(fmt.Errorf("dial %s: %w", addr, err))
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond): // a real peer's recovery
			}
			continue
		}
		if !down.IsZero() {
			d.mu.Lock()
			d.relinks = append(d.relinks, time.Since(down))
			d.mu.Unlock()
		}
		d.drainLinked(ctx, c)
		c.Close()
		down = time.Now()
	}
}

// drainLinked drains the device's queue each time the relay says a record
// was queued, until the link closes or ctx ends.
func (d *rollDevice) drainLinked(ctx context.Context, c *link.Client) {
	for {
		begin := time.Now()
		_, err := c.Drain(ctx, 100, d.receive)
		d.mu.Lock()
		d.slowest = max(d.slowest, time.Since(begin))
		d.mu.Unlock()
		if err != nil {
			return
		}
		select {
		case <-c.Queued():
		case <-c.Done():
			return
		case <-ctx.Done():
			return
		}
	}
}

func (d *rollDevice) receive(_ context.Context, recs []wire.Record) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range heldOf(recs) {
		if prev, ok := d.got[h.seq]; ok && prev != h.id {
			d.twice = append(d.twice, fmt.Sprintf("seq %d carried %s and %s", h.seq, prev, h.id))
		}
		d.got[h.seq] = h.id
	}
	return nil
}

func (d *rollDevice) note(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.errs) < 5 {
		d.errs = append(d.errs, err)
	}
}

// rollLoad is the senders of TestRollingRestart and what they were told.
type rollLoad struct {
	wg   sync.WaitGroup
	halt chan struct{}
	mu   sync.Mutex
	tally
	bad   []string // answers worse than 503 queued false
	count atomic.Int64
	tick  chan struct{}
}

func startRollLoad(t *testing.T, rot *rotation, devs []*rollDevice, senders int) *rollLoad {
	l := &rollLoad{halt: make(chan struct{}), tally: newTally(), tick: make(chan struct{}, 1)}
	for s := range senders {
		tok := relaytest.Token(t, relaytest.Key(t, 0x5100+s), publicURL)
		l.wg.Go(func() {
			for i := 0; !isClosed(l.halt); i++ {
				id := fmt.Sprintf("s%d-%d", s, i)
				addr, done := rot.pick(s + i)
				a, err := send(addr, devs[(s+i)%len(devs)].key.DID().String(), tok, body(id, 200))
				done()
				l.answer(id, a, err)
			}
		})
	}
	return l
}

func (l *rollLoad) answer(id string, a answer, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.bad = append(l.bad, fmt.Sprintf("%s: no answer: %v", id, err))
	case !l.add(id, a):
		l.bad = append(l.bad, fmt.Sprintf("%s: %v %q", id, a, a.Message))
	case a.Queued:
		l.count.Add(1)
		select {
		case l.tick <- struct{}{}:
		default:
		}
	}
}

// waitQueued returns once n more requests were answered queued, failing
// the test when a minute passes first.
func (l *rollLoad) waitQueued(t *testing.T, n int64) {
	t.Helper()
	deadline := time.After(time.Minute)
	for target := l.count.Load() + n; l.count.Load() < target; {
		select {
		case <-l.tick:
		case <-deadline:
			t.Fatalf("%d of %d requests answered queued in a minute", n-(target-l.count.Load()), n)
		}
	}
}

func (l *rollLoad) stop() {
	close(l.halt)
	l.wg.Wait()
}

// checkRolled drains every device once more and checks that each request
// answered queued was received, once per seq, one answered
// store_unconfirmed at most once, and nothing else.
func checkRolled(t *testing.T, f *fleet, l *rollLoad, devs []*rollDevice) {
	t.Helper()
	for _, b := range l.bad[:min(len(l.bad), 10)] {
		t.Errorf("answer worse than 503 queued false: %s", b)
	}
	if len(l.bad) > 10 {
		t.Errorf("and %d more answers worse than 503 queued false", len(l.bad)-10)
	}
	delivered := map[string]int{}
	for i, d := range devs {
		d.receive(context.Background(), drain(t, f.relays[i%3].addr, d.key, true))
		if len(d.twice) > 0 || len(d.errs) > 0 {
			t.Errorf("device %d: %v %v", i, d.twice, errors.Join(d.errs...))
		}
		for _, id := range d.got {
			delivered[id]++
		}
	}
	for id, n := range delivered {
		if n != 1 || !(l.queued[id] || l.unsure[id]) {
			t.Errorf("%s delivered under %d seqs; answered queued %v, unconfirmed %v", id, n, l.queued[id], l.unsure[id])
		}
	}
	for id := range l.queued {
		if delivered[id] == 0 {
			t.Errorf("%s was answered queued and never delivered", id)
		}
	}
}
