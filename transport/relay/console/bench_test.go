package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// benchDevices is the fleet the benchmarks serve.
const benchDevices = 10_000

// benchConsole is a console over real bbolt stores holding benchDevices
// devices, each with a signed status, every third with a signed pulse and
// every tenth with a queued message, in the five states.
func benchConsole(b *testing.B, n int) (*Console, *http.Cookie) {
	b.Helper()
	dir := b.TempDir()
	states, err := agents.OpenBolt(filepath.Join(dir, "agents.db"), &store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	q, err := queue.OpenBolt(filepath.Join(dir, "queue.db"), &queue.Options{Store: &store.Options{NoSync: true}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { states.Close(); q.Close() })
	linked := map[string]bool{}
	for i := range n {
		id := benchPut(b, states, q, i)
		linked[id] = i%5 == 2
	}
	src := Source{States: states, Queue: q, Grace: 5 * time.Minute,
		Up:     func(_ context.Context, a string) bool { return linked[a] },
		Bounds: func(string, agents.State) queuebounds.Bounds { return queuebounds.Default() }}
	op := didKey(b, 1<<30)
	c, err := New(Config{Source: src, PublicURL: "https://relay.example", Operators: []string{op.DID().String()}, Secret: make([]byte, 32), Clock: clocktest.New(t0)})
	if err != nil {
		b.Fatal(err)
	}
	return c, c.auth.session(op.DID().String())
}

func didKey(b *testing.B, i int) *did.PrivateKey {
	seed := make([]byte, 32)
	seed[0], seed[1], seed[2], seed[3] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// benchPut writes device i: hourly and asleep, sleep and overdue, always
// on and linked, halted, or a session that pulsed an hour and a half ago.
func benchPut(b *testing.B, states *agents.Bolt, q *queue.Bolt, i int) string {
	key := didKey(b, i)
	id := key.DID().String()
	modes := []wake.Mode{wake.HourlyWake, wake.Sleep, wake.AlwaysOn, wake.Sleep, wake.Session}
	st := agents.State{Mode: modes[i%5], Window: wake.WindowFor(id), UpdatedAt: t0.Add(-time.Hour), Bounds: queuebounds.Default(),
		Card: fmt.Appendf(nil, `{"name":"pump-%05d","skills":[{"id":"water","name":"water","description":"","tags":["site-%d"]}]}`, i, i%20)}
	switch i % 5 {
	case 0, 3:
		st.NextWake = t0.Add(20 * time.Minute)
	case 1:
		st.NextWake = t0.Add(-77 * time.Minute)
	}
	ws := wire.Status{Version: fmt.Sprintf("1.%d", i%3), Board: "rpi4", Halted: i%5 == 3,
		Wake: &wire.StatusWake{At: t0.Add(-time.Hour), Reason: "rtc"}, LastWake: &wire.StatusWake{At: t0.Add(-2 * time.Hour), Reason: "rtc", AwakeMs: 800}}
	o, err := governed.Sign(key, governed.Template{IssuedAt: t0, Semantic: governed.Semantic{Schema: wire.StatusSchema}, Purpose: wire.PurposeStatus, Payload: ws})
	if err != nil {
		b.Fatal(err)
	}
	if st.Status, err = o.MarshalJSON(); err != nil {
		b.Fatal(err)
	}
	if i%3 == 0 {
		if st.Pulse, err = pulse.Sign(key, pulse.Pulse{Agent: key.DID(), Seq: 1, At: t0.Add(-90 * time.Minute), Mode: string(st.Mode)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := states.Put(context.Background(), id, st, [][]byte{{0, 1, 0, 5, 1}}, nil); err != nil {
		b.Fatal(err)
	}
	if i%10 == 0 {
		r := queue.Record{Agent: id, From: "did:key:zSender", Body: make([]byte, 500)}
		if _, err := q.Enqueue(context.Background(), r, queuebounds.Default(), t0.Add(-time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	return id
}

// BenchmarkFleet10k is the server's time and CPU for one answer of the
// fleet console with 10,000 devices in its bbolt store (docs/performance.md,
// "The fleet console"): the HTML page (first page, a search) and the JSON
// API (a page, and the whole fleet as older clients ask for it). One
// request before them verifies every device's documents once, as the
// first request after the relay starts does (the verdicts are remembered:
// Verified).
func BenchmarkFleet10k(b *testing.B) {
	c, cookie := benchConsole(b, benchDevices)
	m := http.NewServeMux()
	c.Register(m)
	warm := httptest.NewRequest("GET", "/fleet", nil)
	warm.AddCookie(cookie)
	m.ServeHTTP(httptest.NewRecorder(), warm)
	for _, bc := range []struct{ name, path string }{
		{"page=fleet", "/fleet"},
		{"page=search", "/fleet?q=pump-012&state=asleep"},
		{"api=page", "/fleet/api/devices?per=50"},
		{"api=all", "/fleet/api/devices"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", bc.path, nil)
			req.AddCookie(cookie)
			meter := benchcpu.Start(b)
			for b.Loop() {
				w := httptest.NewRecorder()
				m.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", bc.path, w.Code, w.Body)
				}
			}
			meter.Stop()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/op")
		})
	}
}
