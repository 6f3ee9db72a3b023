//go:build integration

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// historyFleet is TestHistory's fleet: 3 nats-server processes and 3
// relays, relay i reaching server j only through proxies[i][j].
type historyFleet struct {
	*fleet
	proxies [3][3]*faultProxy
	dirs    [3]string
	args    [3][]string
	mu      sync.Mutex // guards fleet.relays, replaced by restarts
}

func startHistoryFleet(t *testing.T) *historyFleet {
	t.Helper()
	h := &historyFleet{fleet: &fleet{procs: startNATSProcs(t)}}
	for i := range 3 {
		var urls []string
		for j, n := range h.procs {
			h.proxies[i][j] = startProxy(t, strings.TrimPrefix(n.url, "nats://"))
			urls = append(urls, h.proxies[i][j].url())
		}
		h.dirs[i] = t.TempDir()
		h.args[i] = []string{"--store", "jetstream", "--nats", strings.Join(urls, ","), "--public-url", publicURL}
		h.relays = append(h.relays, startRelay(t, h.dirs[i], h.args[i]...))
	}
	return h
}

func (h *historyFleet) relay(i int) *relayProc {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.relays[i]
}

// inject starts fault f.
func (h *historyFleet) inject(f *fault) {
	switch f.kind {
	case faultNATSKill:
		h.procs[f.node].kill()
	case faultRelayKill:
		h.relay(f.relay).kill()
	default:
		mode := proxyBlackhole
		if f.kind == faultReset {
			mode = proxyRefuse
		}
		for _, n := range f.nodes {
			h.proxies[f.relay][n].set(mode)
		}
	}
}

// heal ends fault f: a killed process is started again (a NATS server
// until it is a current replica again), a cut relay reconnected.
func (h *historyFleet) heal(t *testing.T, f *fault) {
	t.Helper()
	switch f.kind {
	case faultNATSKill:
		n := h.procs[f.node]
		if n.exited() {
			if err := n.start(t); err != nil {
				t.Fatal(err)
			}
			waitRejoined(t, h.fleet, n)
		}
	case faultRelayKill:
		if r := h.relay(f.relay); r.Cmd.ProcessState != nil {
			nr := startRelay(t, h.dirs[f.relay], h.args[f.relay]...)
			h.mu.Lock()
			h.relays[f.relay] = nr
			h.mu.Unlock()
		}
	default:
		for _, n := range f.nodes {
			h.proxies[f.relay][n].set(proxyPass)
		}
	}
}

// exited reports whether the node's process has exited.
func (n *natsNode) exited() bool {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// control injects and heals p's faults as the senders' answers reach
// their marks and each fault has lasted its hold; it closes healed when
// every fault is healed.
func (h *historyFleet) control(t *testing.T, p *runPlan, answered *atomic.Int64, progress <-chan struct{}, healed chan<- struct{}) {
	t.Helper()
	for {
		n, left, wait := answered.Load(), 0, time.Duration(-1)
		for _, f := range p.faults {
			if !f.injected && n >= f.at {
				h.inject(f)
				f.injected, f.since = true, time.Now()
				t.Logf("  answer %d: %s", n, f)
			}
			switch held := time.Since(f.since); {
			case f.injected && !f.isHealed() && n >= f.heal && held >= f.hold:
				start := time.Now()
				h.heal(t, f)
				close(f.healed)
				t.Logf("  answer %d: healed %s after %v, in %v", answered.Load(), f.kind, held.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			case !f.isHealed():
				left++
				if f.injected && n >= f.heal && (wait < 0 || f.hold-held < wait) {
					wait = f.hold - held
				}
			}
		}
		if left == 0 {
			close(healed)
			return
		}
		var timer <-chan time.Time
		if wait >= 0 {
			timer = time.After(wait)
		}
		select {
		case <-progress:
		case <-timer:
		}
	}
}

func (f *fault) isHealed() bool {
	select {
	case <-f.healed:
		return true
	default:
		return false
	}
}

// run makes one run of plan p with a new device and returns its history.
// Each sender sends p.perSend requests and goes on until every fault is
// healed.
func (h *historyFleet) run(t *testing.T, run int, p *runPlan) *recorder {
	t.Helper()
	t.Logf("  plan: %v", p)
	dev := relaytest.Key(t, 0x4000+run)
	publish(t, h.relay(run%3).addr, dev, device{mode: "sleep", bounds: &queuebounds.Bounds{MaxMessages: p.bound}})
	l := &sendLoad{rec: &recorder{start: time.Now()}, dev: dev, progress: make(chan struct{}, 1), healed: make(chan struct{})}
	final, drained := make(chan struct{}), make(chan error, 1)
	var wg sync.WaitGroup
	for s := range p.senders {
		tok := relaytest.Token(t, relaytest.Key(t, 0x6000+8*run+s), publicURL)
		r := rand.New(rand.NewPCG(p.seed, uint64(s+1)))
		wg.Go(func() {
			for i := 0; i < p.perSend || !isClosed(l.healed); i++ {
				if i >= p.perSend {
					// Past its share a sender only keeps the load up until
					// the faults heal; at the pace of a full queue's 507s
					// (thousands a second) it made histories of 11,000
					// operations that porcupine could not check in time.
					select {
					case <-l.healed:
					case <-time.After(senderPause):
					}
				}
				h.sendOne(l, s, r, tok, fmt.Sprintf("r%d-s%d-%d", run, s, i))
			}
		})
	}
	go func() { drained <- h.drainer(l.rec, dev, p, p.senders, final) }()
	h.control(t, p, &l.answered, l.progress, l.healed)
	wg.Wait()
	close(final)
	if err := <-drained; err != nil {
		t.Errorf("seed %d: the device could not drain: %v", p.seed, err)
	}
	for _, b := range l.bad {
		t.Errorf("seed %d: %s", p.seed, b)
	}
	return l.rec
}

// senderPause spaces a sender's requests once it has sent its share
// (runPlan.perSend) and waits for the faults to heal.
const senderPause = 20 * time.Millisecond

// sendLoad is what a run's senders share.
type sendLoad struct {
	rec      *recorder
	dev      *did.PrivateKey
	answered atomic.Int64
	progress chan struct{} // a send was answered
	healed   chan struct{} // every fault is healed
	mu       sync.Mutex
	bad      []string // answers no relay may give
}

// sendOne sends the request id as sender s through a relay r picks and
// records it. Like a balancer, it sends it to the next relay when one
// refuses the connection (it is down and never saw the request).
func (h *historyFleet) sendOne(l *sendLoad, s int, r *rand.Rand, tok, id string) {
	call, first := l.rec.now(), r.IntN(3)
	for k := range 3 {
		out, ok, bad := sendOnce(h.relay((first+k)%3).addr, l.dev, tok, id)
		if bad != "" {
			l.mu.Lock()
			l.bad = append(l.bad, bad)
			l.mu.Unlock()
		}
		if ok {
			l.rec.add(s, queueInput{kind: opEnqueue, id: id}, call, out)
			break
		}
	}
	l.answered.Add(1)
	select {
	case l.progress <- struct{}{}:
	default:
	}
}

// drainer is the device: it links through a random relay, drains in
// batches of p.batch (acknowledging each, or with odds p.noAck leaving one
// unacknowledged and linking again), relinks with odds p.relinkEach, and
// returns once a pull from seq 0 found the queue empty after final closed
// (the senders done and every fault healed).
func (h *historyFleet) drainer(rec *recorder, dev *did.PrivateKey, p *runPlan, client int, final <-chan struct{}) error {
	r := rand.New(rand.NewPCG(p.seed, 0xde))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		c, err := link.Dial(ctx, link.Config{RelayURL: h.relay(r.IntN(3)).addr, Audience: publicURL, Key: dev})
		if err != nil {
			last = err
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond): // a real peer's recovery
			}
			continue
		}
		empty, err := drainLink(ctx, c, rec, p, r, client, final)
		c.Close()
		if empty {
			return nil
		}
		if err != nil {
			last = err
		}
	}
	return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
}

// drainLink drains over one link until the link fails, the device decides
// to link again, or (empty true) a pull from seq 0 after final found
// nothing.
func drainLink(ctx context.Context, c *link.Client, rec *recorder, p *runPlan, r *rand.Rand, client int, final <-chan struct{}) (bool, error) {
	var after uint64
	for {
		fin, call := isClosed(final), rec.now()
		recs, _, err := c.Pull(ctx, after, p.batch)
		if err != nil {
			return false, err // a pull changes nothing: not an operation
		}
		rec.add(client, queueInput{kind: opPull, after: after, max: p.batch}, call, queueOutput{recs: heldOf(recs)})
		if len(recs) == 0 {
			if fin || r.Float64() < p.relinkEach {
				return fin && after == 0, nil
			}
			select {
			case <-c.Queued():
			case <-c.Done():
			case <-final:
			case <-time.After(200 * time.Millisecond): // a sleeping device's next wake
			}
			continue
		}
		if r.Float64() < p.noAck {
			return false, nil // the batch comes again on the next link
		}
		seqs := seqsOf(recs)
		call = rec.now()
		err = c.Ack(ctx, seqs)
		rec.add(client, queueInput{kind: opAck, seqs: seqs}, call, queueOutput{unknown: err != nil})
		if err != nil {
			return false, err
		}
		after = recs[len(recs)-1].Seq
		if r.Float64() < p.relinkEach {
			return false, nil
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// heldOf returns each record's seq and the JSON-RPC id of its request.
func heldOf(recs []wire.Record) []heldRecord {
	out := make([]heldRecord, len(recs))
	for i, r := range recs {
		var env struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(r.Body, &env); err != nil {
			env.ID = fmt.Sprintf("(not the JSON sent: %v)", err)
		}
		out[i] = heldRecord{seq: r.Seq, id: env.ID}
	}
	return out
}
