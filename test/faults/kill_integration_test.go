//go:build integration

package faults

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// TestKillUnderLoad: eight senders enqueue while the relay is killed with
// SIGKILL, four times over one data directory; the device drains between
// kills. Every message answered queued: true is delivered exactly once,
// and none answered not queued is delivered.
func TestKillUnderLoad(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			f := newFixture(t, engine, t.TempDir())
			r := f.start(t)
			relaytest.Publish(t, r.URL, f.dev, "sleep")
			for round := range 4 {
				if round > 0 {
					r = f.start(t)
					if err := f.l.drain(r.URL, f.dev); err != nil {
						t.Fatalf("round %d: drain after the kill: %v\n%s", round, err, r.Log())
					}
				}
				target := f.l.ackedCount() + 100 + rand.IntN(300)
				stop := load(f, r.URL, 8, 64+rand.IntN(2048))
				if !f.l.waitAcked(target, 30*time.Second) {
					t.Fatalf("round %d: %d messages acknowledged in 30 s, want %d", round, f.l.ackedCount(), target)
				}
				r.Kill() // SIGKILL: no deferred code, no flush, no close
				stop()
			}
			r = f.start(t)
			if err := f.l.drain(r.URL, f.dev); err != nil {
				t.Fatalf("final drain: %v\n%s", err, r.Log())
			}
			if c := f.l.check(t, engine+" after 4 SIGKILLs under load", false); c.acked < 400 {
				t.Errorf("only %d messages acknowledged over 4 rounds, want at least 400", c.acked)
			}
		})
	}
}

// load runs n senders against the relay at url, each sending messages of
// pad bytes one after another, until the returned stop is called (it
// waits for them).
func load(f *fixture, url string, n, pad int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				if a := f.l.send(url, f.dev.DID(), f.sender, pad); a.Err != nil {
					return // the relay is gone
				}
			}
		}()
	}
	return func() { done.Store(true); wg.Wait() }
}
