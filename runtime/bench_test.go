package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// BenchmarkWakeDrain500 is one wake of the agent, on the real clock, that
// drains 500 queued 4 KiB objects from a real relay (HTTP and WebSocket on
// loopback, its bbolt queue with fsync) into a real bbolt file with fsync,
// handing each to an in-process application. It reports the awake time of
// the wake (link, pulse, card, publish, drain: everything but the idle
// live phase) and its split: commit (bbolt writes and fsyncs), checks (the
// six receiver checks, signature verification first), open (MLS
// decryption; zero until the MLS sessions are configured: these objects
// are unencrypted), network (pull and ack round trips) and notify.
func BenchmarkWakeDrain500(b *testing.B) {
	const n = 500
	var awake, commit, checks, open, network, notify time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bw := newBenchWorld(b, n)
		b.StartTimer()
		r := bw.wake(b)
		b.StopTimer()
		if r.Drain.Delivered != n {
			b.Fatalf("delivered %d of %d: %v", r.Drain.Delivered, n, r.Drain)
		}
		awake += r.Awake - r.Phase(runtime.PhaseLive)
		t := r.Drain.Time
		commit += t.Commit
		checks += t.Checks
		open += t.Open
		network += t.Pull + t.Ack
		notify += t.Notify
		bw.close()
	}
	per := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
	b.ReportMetric(per(awake), "awake-ms/wake")
	b.ReportMetric(per(commit), "commit-fsync-ms/wake")
	b.ReportMetric(per(checks), "checks-ms/wake")
	b.ReportMetric(per(open), "decrypt-ms/wake")
	b.ReportMetric(per(network), "network-ms/wake")
	b.ReportMetric(per(notify), "notify-ms/wake")
}

type benchWorld struct {
	srv    *httptest.Server
	queue  *queue.Bolt
	states *relay.States
	relay  *relay.Relay
	cfg    runtime.Config
	wakes  chan runtime.WakeReport
	drains chan struct{}
}

func newBenchWorld(b *testing.B, n int) *benchWorld {
	b.Helper()
	dir := b.TempDir()
	bw := &benchWorld{wakes: make(chan runtime.WakeReport, 4), drains: make(chan struct{}, 64)}
	var err error
	if bw.queue, err = queue.OpenBolt(filepath.Join(dir, "queue.db"), nil); err != nil {
		b.Fatal(err)
	}
	if bw.states, err = relay.OpenStates(filepath.Join(dir, "agents.db"), nil); err != nil {
		b.Fatal(err)
	}
	bw.srv = httptest.NewUnstartedServer(nil)
	if bw.relay, err = relay.New(relay.Config{PublicURL: "http://" + bw.srv.Listener.Addr().String(), Queue: bw.queue, States: bw.states}); err != nil {
		b.Fatal(err)
	}
	bw.srv.Config.Handler = bw.relay.Handler()
	bw.srv.Start()

	key := runtimetest.Key(b, 8)
	alice := runtimetest.Key(b, 1)
	bounds := queue.DefaultBounds()
	bounds.MaxPerPeer, bounds.MaxBytes = n, 64<<20
	payload := map[string]any{"text": string(bytes.Repeat([]byte("x"), 4<<10))}
	var wg sync.WaitGroup
	for s := 0; s < 32; s++ {
		wg.Go(func() {
			for i := s; i < n; i += 32 {
				obj := runtimetest.Object(b, alice, "comms:message", time.Now().Add(-time.Minute), time.Hour, payload)
				r := queue.Record{Agent: key.DID().String(), From: alice.DID().String(), Body: runtimetest.Body(b, runtimetest.DataPart(b, obj))}
				if _, err := bw.queue.Enqueue(context.Background(), r, bounds, time.Now()); err != nil {
					panic(fmt.Sprint("enqueue: ", err))
				}
			}
		})
	}
	wg.Wait()
	app := deliver.HandlerFunc(func(context.Context, deliver.Delivery) (deliver.Outcome, error) {
		return deliver.Outcome{OK: true}, nil
	})
	bw.cfg = runtime.Config{
		Key: key, DataDir: filepath.Join(dir, "agent"), RelayURL: bw.srv.URL, Mode: wake.AlwaysOn,
		Purposes: purpose.Set{"comms:*"}, AllowPlaintext: true, BatchSize: 64,
		Routes: []deliver.Route{{Pattern: "*", Name: "app", Handler: app}},
		OnWake: func(r runtime.WakeReport) { bw.wakes <- r },
		OnPhase: func(p runtime.Phase) {
			if p.Name == runtime.PhaseDrain {
				bw.drains <- struct{}{}
			}
		},
	}
	return bw
}

// wake runs the agent until its first drain is done, then ends the wake
// (a mode change) and returns its report.
func (bw *benchWorld) wake(b *testing.B) runtime.WakeReport {
	a, err := runtime.New(bw.cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	<-bw.drains
	a.SetMode(wake.Sleep, time.Time{})
	r := <-bw.wakes
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return r
}

func (bw *benchWorld) close() {
	bw.relay.Link().Close()
	bw.srv.Close()
	bw.queue.Close()
	bw.states.Close()
}
