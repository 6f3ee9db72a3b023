package relay

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/wake"
)

// publishSecond links key, publishes an hourly_wake state with the
// window of minute 11, and returns the wake second the state-ok assigns.
func (h *harness) publishSecond(t *testing.T, key *did.PrivateKey) int {
	t.Helper()
	c, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: key, Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ok, err := c.Publish(context.Background(), h.state(t, key, c.Hello(), "hourly_wake", deviceOpts{}))
	if err != nil {
		t.Fatal(err)
	}
	if ok.WakeSecond == nil {
		t.Fatal("state-ok assigns no wake second")
	}
	st, err := h.states.Get(context.Background(), key.DID().String())
	if err != nil || !st.WakeSecondSet || st.WakeSecond != *ok.WakeSecond {
		t.Fatalf("stored wake second %d (set %v), %v; the state-ok said %d", st.WakeSecond, st.WakeSecondSet, err, *ok.WakeSecond)
	}
	return *ok.WakeSecond
}

// TestWakeSecondFresh: a relay that knows no other agent assigns the
// second the device derives itself; a device in another mode than
// hourly_wake gets none.
func TestWakeSecondFresh(t *testing.T) {
	h := newHarness(t, nil)
	dev, other := didtest.Key(t, 1), didtest.Key(t, 2)
	if got, want := h.publishSecond(t, dev), wake.WakeSecond(dev.DID().String()); got != want {
		t.Errorf("fresh relay assigns %d, want the derived %d", got, want)
	}
	c := h.device(t, other, "always_on", deviceOpts{})
	ok, err := c.Publish(context.Background(), h.state(t, other, c.Hello(), "sleep", deviceOpts{}))
	if err != nil || ok.WakeSecond != nil {
		t.Errorf("sleep mode: state-ok %+v, %v; want no wake second", ok, err)
	}
	if st, err := h.states.Get(context.Background(), other.DID().String()); err != nil || st.WakeSecondSet {
		t.Errorf("sleep mode: the record has wake second %d (set %v), %v", st.WakeSecond, st.WakeSecondSet, err)
	}
}

// TestWakeSecondAssigned: the relay assigns the least-loaded second of
// the minute the device's window opens in, counting the assignments its
// store holds (made before a restart or by another relay); the
// assignment holds at the next state; forgetting an agent frees it.
func TestWakeSecondAssigned(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	for sec := range 60 { // minute 11 holds an agent at every second but 23
		if sec == 23 {
			continue
		}
		st := agents.State{Mode: wake.HourlyWake, Window: wake.Window{Minute: 11}, WakeSecond: sec, WakeSecondSet: true, UpdatedAt: t0}
		if err := h.states.Put(ctx, fmt.Sprintf("did:key:zFill%d", sec), st, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	dev, dev2, dev3 := didtest.Key(t, 1), didtest.Key(t, 2), didtest.Key(t, 3)
	if got := h.publishSecond(t, dev); got != 23 {
		t.Fatalf("assigned %d, want 23, the only free second of minute 11", got)
	}
	if got := h.publishSecond(t, dev); got != 23 {
		t.Errorf("at the next state: %d, want 23 again", got)
	}
	// Every second holds one now: the tie goes to the device's own.
	if got, want := h.publishSecond(t, dev2), wake.WakeSecond(dev2.DID().String()); got != want {
		t.Errorf("minute 11 evenly full: assigned %d, want the derived %d", got, want)
	}
	if err := h.relay.forget(ctx, dev.DID().String(), 11, t0); err != nil {
		t.Fatal(err)
	}
	if got := h.publishSecond(t, dev3); got != 23 {
		t.Errorf("after forgetting the agent at 23: assigned %d, want 23", got)
	}
}

// BenchmarkLoadWakeSeconds is what a relay pays, before its first
// assignment (at Run), to read the wake seconds its bbolt agent store
// holds for 10,000 agents: the loop times one whole read (agents/op).
// The store is written without fsync, which only the setup's writes
// would pay.
func BenchmarkLoadWakeSeconds(b *testing.B) {
	states, err := agents.OpenBolt(filepath.Join(b.TempDir(), "agents.db"), &store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer states.Close()
	h := newHarness(b, func(c *Config) { c.Stores.States = states })
	ctx := context.Background()
	const n = 10000
	for i := range n {
		st := agents.State{Mode: wake.HourlyWake, Window: wake.Window{Minute: i % 60}, WakeSecond: (i / 60) % 60, WakeSecondSet: true, UpdatedAt: t0}
		if err := states.Put(ctx, fmt.Sprintf("did:key:zBench%d", i), st, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	meter := benchcpu.Start(b)
	for i := 0; i < b.N; i++ {
		h.relay.seconds = wakeSeconds{s: shared.NewMemory().WakeSeconds()}
		if err := h.relay.loadWakeSeconds(ctx); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
	b.StopTimer()
	if got, _ := h.relay.seconds.s.Load(ctx, 0, 0); got != n/3600+1 && got != n/3600 {
		b.Fatalf("second 0 of minute 0 holds %d", got)
	}
	b.ReportMetric(n, "agents/op")
}
