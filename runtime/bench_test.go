package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/runtime/sessions"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// BenchmarkWakeDrain500 is one wake of the agent, on the real clock, that
// drains 500 queued MLS-encrypted 4 KiB Governed Objects (and the Welcome
// of their session) from a real relay (HTTP and WebSocket on loopback, its
// bbolt queue with fsync) into a real bbolt file with fsync, handing each
// to an in-process application. It reports the awake time of the wake
// (link, pulse, KeyPackages, card, publish, drain: everything but the idle
// live phase) and its split: commit (the batch transactions' bbolt writes
// and fsyncs), decrypt (MLS: the Welcome and 500 PrivateMessages),
// checks (the six receiver checks, signature verification first), network
// (pull and ack round trips) and notify. The Plaintext variant drains the
// same objects unencrypted, side by side, to show what MLS costs.
func BenchmarkWakeDrain500(b *testing.B) {
	for _, mls := range []bool{true, false} {
		name := "MLS"
		if !mls {
			name = "Plaintext"
		}
		b.Run(name, func(b *testing.B) { benchWakeDrain(b, 500, mls) })
	}
}

func benchWakeDrain(b *testing.B, n int, mls bool) {
	var awake, commit, checks, open, network, notify time.Duration
	meter := benchcpu.Start(b)
	meter.Pause()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bw := newBenchWorld(b, n, mls)
		b.StartTimer()
		meter.Resume()
		r := bw.wake(b)
		meter.Pause()
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
	meter.Stop()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(per(awake), "awake-ms/wake")
	b.ReportMetric(per(commit), "commit-fsync-ms/wake")
	b.ReportMetric(per(open), "decrypt-ms/wake")
	b.ReportMetric(per(checks), "checks-ms/wake")
	b.ReportMetric(per(network), "network-ms/wake")
	b.ReportMetric(per(notify), "notify-ms/wake")
}

type benchWorld struct {
	queue  *queue.Bolt
	relay  *worldtest.Relay
	cfg    runtime.Config
	wakes  chan runtime.WakeReport
	drains chan struct{}
}

// fill queues n messages of 4 KiB from alice to the agent to, each sealed by
// seal.
func (bw *benchWorld) fill(b *testing.B, n int, to did.DID, alice *did.PrivateKey, seal func([]byte) a2a.Part) {
	b.Helper()
	bounds := queuebounds.Default()
	bounds.MaxMessages, bounds.MaxPerPeer, bounds.MaxBytes, bounds.MaxPeerBytes = n+16, n+16, 64<<20, 64<<20
	payload := map[string]any{"text": string(bytes.Repeat([]byte("x"), 4<<10))}
	for range n {
		obj := runtimetest.Object(b, alice, "comms:message", time.Now().Add(-time.Minute), time.Hour, payload)
		r := queue.Record{Agent: to.String(), From: alice.DID().String(), Body: runtimetest.Body(b, seal(obj))}
		if _, err := bw.queue.Enqueue(context.Background(), r, bounds, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// config is the agent's configuration: an always-on agent whose hooks
// feed bw.wakes and bw.drains, and whose application accepts everything.
func (bw *benchWorld) config(key *did.PrivateKey, agentDir string, mls bool) runtime.Config {
	app := deliver.HandlerFunc(func(context.Context, deliver.Delivery) (deliver.Outcome, error) {
		return deliver.Outcome{OK: true}, nil
	})
	return runtime.Config{
		PipelineConfig: runtime.PipelineConfig{Key: key, Purposes: purpose.Set{"comms:*"}, AllowPlaintext: !mls,
			Routes: []deliver.Route{{Pattern: "*", Name: "app", Handler: app}}},
		Hooks: runtime.Hooks{
			OnWake: func(r runtime.WakeReport) { bw.wakes <- r },
			OnPhase: func(p runtime.Phase) {
				if p.Name == runtime.PhaseDrain {
					bw.drains <- struct{}{}
				}
			},
		},
		Store: runtime.Store{
			DataDir:   agentDir,
			BatchSize: 64,
		},
		Relay:    runtime.Relay{URL: bw.relay.URL},
		Schedule: runtime.Schedule{Mode: wake.AlwaysOn},
		MLS: runtime.MLS{OpenMLS: func(db *bolt.DB) (drain.Sessions, runtime.KeyPackages, error) {
			s, err := session.New(session.Config{Key: key})
			return sessions.Sessions{S: s}, sessions.KeyPackages{S: s, DB: db}, err
		}},
	}
}

func newBenchWorld(b *testing.B, n int, mls bool) *benchWorld {
	b.Helper()
	dir := b.TempDir()
	bw := &benchWorld{wakes: make(chan runtime.WakeReport, 4), drains: make(chan struct{}, 64)}
	// The queue is filled in seal order (MLS decrypts generations out of
	// order only within a window) without fsync, as setup, then reopened
	// with fsync for the relay.
	var err error
	if bw.queue, err = queue.OpenBolt(filepath.Join(dir, "queue.db"), &queue.Options{Store: &store.Options{NoSync: true}}); err != nil {
		b.Fatal(err)
	}
	key := runtimetest.Key(b, 8)
	alice := runtimetest.Key(b, 1)
	agentDir := filepath.Join(dir, "agent")
	seal := func(obj []byte) a2a.Part { return runtimetest.DataPart(b, obj) }
	if mls {
		seal = bw.session(b, key, alice, agentDir, filepath.Join(dir, "alice"))
	}
	bw.fill(b, n, key.DID(), alice, seal)
	bw.queue.Close()
	if bw.relay, err = worldtest.Open(dir, relay.Config{}); err != nil {
		b.Fatal(err)
	}
	bw.queue = bw.relay.Queue
	bw.cfg = bw.config(key, agentDir, mls)
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
	bw.relay.Close()
}

// session prepares an MLS pair session from alice to the agent: a
// KeyPackage from the agent's pool (in its bbolt file, as its first wake
// would publish it), the Welcome queued at the relay first, and a sealer
// for alice's objects.
func (bw *benchWorld) session(b *testing.B, key, alice *did.PrivateKey, agentDir, aliceDir string) func([]byte) a2a.Part {
	b.Helper()
	adb, err := store.Open(filepath.Join(agentDir, runtime.DBFile), nil)
	if err != nil {
		b.Fatal(err)
	}
	as, _ := session.New(session.Config{Key: key})
	var kps [][]byte
	err = adb.Update(func(tx *bolt.Tx) (err error) { kps, err = as.Refill(tx, 1); return err })
	adb.Close()
	if err != nil {
		b.Fatal(err)
	}
	sdb, err := store.Open(filepath.Join(aliceDir, "sessions.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sdb.Close() })
	ss, _ := session.New(session.Config{Key: alice})
	var pair *session.Pair
	if err := sdb.Update(func(tx *bolt.Tx) (err error) { pair, err = ss.EstablishPair(tx, key.DID(), kps[0]); return err }); err != nil {
		b.Fatal(err)
	}
	if err := sdb.Update(func(tx *bolt.Tx) error { return ss.Delivered(tx, pair.Group) }); err != nil {
		b.Fatal(err)
	}
	hs, err := pair.Handshake.Part()
	if err != nil {
		b.Fatal(err)
	}
	r := queue.Record{Agent: key.DID().String(), From: alice.DID().String(), Kind: queue.KindHandshake, Body: runtimetest.Body(b, hs)}
	if _, err := bw.queue.Enqueue(context.Background(), r, queuebounds.Default(), time.Now()); err != nil {
		b.Fatal(err)
	}
	return func(obj []byte) a2a.Part {
		var w a2a.MLSWire
		if err := sdb.Update(func(tx *bolt.Tx) (err error) {
			w, err = ss.SealObject(tx, pair.Group, json.RawMessage(obj))
			return err
		}); err != nil {
			b.Fatal(err)
		}
		p, err := w.Part()
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
}
