//go:build integration

package faults

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// engines are the queue engines every fault runs on.
var engines = []string{"bolt", "log"}

// key returns the did:key whose Ed25519 seed is n.
func key(t testing.TB, n int) *did.PrivateKey {
	t.Helper()
	seed := make([]byte, 32)
	seed[0] = 0xFA // so that these keys differ from other packages'
	seed[31] = byte(n)
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// ledger is what happened to every message by its messageId.
type ledger struct {
	mu        sync.Mutex
	acked     map[string]bool // answered queued: true
	refused   map[string]bool // answered, not queued
	delivered map[string]int  // times drained and acknowledged
	pads      map[string]int  // the padding of each message sent
	changed   map[string]bool // delivered with another body than sent
	next      atomic.Int64
	// reached is closed once len(acked) reaches target (waitAcked).
	reached chan struct{}
	target  int
}

func newLedger() *ledger {
	return &ledger{acked: map[string]bool{}, refused: map[string]bool{}, delivered: map[string]int{}, pads: map[string]int{}, changed: map[string]bool{}}
}

// send sends one new message padded with padLen bytes and records the
// answer.
func (l *ledger) send(url string, dev did.DID, sender *did.PrivateKey, padLen int) relaytest.Answer {
	id := fmt.Sprintf("m%d", l.next.Add(1))
	pad := padding(id, padLen)
	a := relaytest.Send(url, dev, sender, id, pad)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pads[id] = len(pad)
	switch {
	case a.Err != nil: // the relay died mid-request: unknown either way
	case a.Queued:
		l.acked[id] = true
		if l.reached != nil && len(l.acked) >= l.target {
			close(l.reached)
			l.reached = nil
		}
	default:
		l.refused[id] = true
	}
	return a
}

// ackedCount is how many messages were answered queued: true.
func (l *ledger) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// padding is the padding of message id, n bytes (every sender pads with
// one letter per message, so that the body can be checked on delivery).
func padding(id string, n int) string { return strings.Repeat(string(rune('a'+len(id)%26)), n) }

// waitAcked waits up to d until n messages were acknowledged and reports
// whether they were.
func (l *ledger) waitAcked(n int, d time.Duration) bool {
	l.mu.Lock()
	if len(l.acked) >= n {
		l.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	l.reached, l.target = ch, n
	l.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// drain drains dev's queue on the relay at url into the ledger.
func (l *ledger) drain(url string, dev *did.PrivateKey) error {
	return relaytest.Drain(url, dev, func(bodies [][]byte) {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, b := range bodies {
			id := relaytest.MessageID(b)
			l.delivered[id]++
			if n, ok := l.pads[id]; !ok || string(b) != relaytest.Body(id, padding(id, n)) {
				l.changed[id] = true
			}
		}
	})
}

// clone returns a copy of the ledger's answers and deliveries.
func (l *ledger) clone() *ledger {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := newLedger()
	maps.Copy(c.acked, l.acked)
	maps.Copy(c.refused, l.refused)
	maps.Copy(c.delivered, l.delivered)
	maps.Copy(c.pads, l.pads)
	maps.Copy(c.changed, l.changed)
	return c
}

// counts is the ledger's tally.
type counts struct {
	acked, delivered, lost, duplicated, refusedDelivered, changed int
	lostIDs                                                       []string
}

func (c counts) String() string {
	return fmt.Sprintf("acknowledged %d, delivered %d, lost %d, duplicated %d, refused but delivered %d, delivered changed %d",
		c.acked, c.delivered, c.lost, c.duplicated, c.refusedDelivered, c.changed)
}

func (l *ledger) count() counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := counts{acked: len(l.acked), delivered: len(l.delivered), changed: len(l.changed)}
	for id := range l.acked {
		if l.delivered[id] == 0 {
			c.lost++
			if len(c.lostIDs) < 10 {
				c.lostIDs = append(c.lostIDs, id)
			}
		}
	}
	for id, n := range l.delivered {
		if n > 1 {
			c.duplicated++
		}
		if l.refused[id] {
			c.refusedDelivered++
		}
	}
	return c
}

// check fails t on a loss (unless reported, the relay's log says what it
// withheld or cut), a duplicate or a message answered not queued that was
// delivered (a sender that retries as told would make a duplicate).
func (l *ledger) check(t testing.TB, what string, reported bool) counts {
	t.Helper()
	c := l.count()
	t.Logf("%s: %s", what, c)
	if c.lost > 0 && !reported {
		t.Errorf("%s: %d acknowledged messages silently lost (%v)", what, c.lost, c.lostIDs)
	}
	if c.changed > 0 {
		t.Errorf("%s: %d messages delivered with a body other than the one sent", what, c.changed)
	}
	if c.duplicated > 0 {
		t.Errorf("%s: %d messages delivered twice", what, c.duplicated)
	}
	if c.refusedDelivered > 0 {
		t.Errorf("%s: %d messages answered not queued were delivered", what, c.refusedDelivered)
	}
	return c
}

// fixture is one relay data directory with a sleeping device, a sender
// and the ledger of its messages.
type fixture struct {
	engine string
	dir    string
	dev    *did.PrivateKey
	sender *did.PrivateKey
	l      *ledger
}

func newFixture(t testing.TB, engine, dir string) *fixture {
	return &fixture{engine: engine, dir: dir, dev: key(t, 1), sender: key(t, 2), l: newLedger()}
}

// args are the relay's flags: the engine, the device allowed (so it is
// no device on probation) and bounds that refuse nothing the tests send.
func (f *fixture) args(extra ...string) []string {
	return append([]string{"--queue-engine", f.engine, "--allow-agent", f.dev.DID().String(),
		"--max-messages", "1000000", "--max-per-peer", "1000000", "--max-bytes", "1099511627776",
		"--max-peer-bytes", "1099511627776", "--max-queue-bytes", "0"}, extra...)
}

// tryStart starts the relay on the fixture's directory: it serves (r),
// or it stops with exit status exit and log.
func tryStart(t testing.TB, f *fixture, extra ...string) (r *relaytest.Relay, exit int, log string) {
	t.Helper()
	return relaytest.Try(t, f.dir, f.args(extra...)...)
}

// start starts the relay on the fixture's directory; it must serve.
func (f *fixture) start(t testing.TB, extra ...string) *relaytest.Relay {
	t.Helper()
	return relaytest.Start(t, f.dir, f.args(extra...)...)
}

// fill starts a relay, publishes the device asleep, queues n messages
// (padded to pad bytes), drains the first drained of them, and stops it
// (SIGTERM): a data directory with live records, deleted ones and a
// device state.
func (f *fixture) fill(t testing.TB, n, drained, pad int) {
	t.Helper()
	r := f.start(t)
	relaytest.Publish(t, r.URL, f.dev, "sleep")
	f.sendN(t, r.URL, drained, pad)
	if err := f.l.drain(r.URL, f.dev); err != nil {
		t.Fatal(err)
	}
	f.sendN(t, r.URL, n-drained, pad)
	if err := r.Stop(); err != nil {
		t.Fatalf("stopping the relay: %v\n%s", err, r.Log())
	}
}

// sendN sends n messages one after another (so that the files' layout,
// and what each damage offset hits, is the same in every run); each must
// be queued.
func (f *fixture) sendN(t testing.TB, url string, n, pad int) {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := range 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i++ {
				if a := f.l.send(url, f.dev.DID(), f.sender, pad); !a.Queued {
					failed.Store(fmt.Sprintf("status %d, err %v", a.Status, a.Err))
					return
				}
			}
		}()
	}
	wg.Wait()
	if v := failed.Load(); v != nil {
		t.Fatalf("a send was not queued: %v", v)
	}
}

// snapshot copies the regular files of dir (recursively) to a new
// directory and returns it.
func snapshot(t testing.TB, dir string) string {
	t.Helper()
	dst := t.TempDir()
	copyTree(t, dir, dst)
	return dst
}

// restore makes dir hold exactly the files of snap.
func restore(t testing.TB, snap, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	copyTree(t, snap, dir)
}

func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o700)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		o, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(o, in); err != nil {
			o.Close()
			return err
		}
		return o.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}
