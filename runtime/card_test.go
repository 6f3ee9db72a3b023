package runtime_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// served returns the card and the pulse the relay serves for the agent;
// the card must verify under the agent's DID and name nothing that changes
// between wakes (no liveness extension: the pulse is where the agent
// signs its next wake).
func (w *world) served() (card, doc []byte) {
	w.t.Helper()
	get := func(path string) []byte {
		req, _ := http.NewRequest(http.MethodGet, w.srv.URL+"/a/"+w.key.DID().String()+path, nil)
		req.Header.Set("A2A-Version", "1.0") // the signed card, not its 0.3 view
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			w.t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return b
	}
	raw, doc := get(a2a.CardPath), get(a2a.PulsePath)
	if err := a2a.VerifyCard(raw, w.key.DID()); err != nil {
		w.t.Fatalf("served card: %v", err)
	}
	c, err := a2a.ParseCard(raw)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, ok, err := c.Liveness(); ok || err != nil {
		w.t.Errorf("served card has a liveness extension (%v), which changes every wake", err)
	}
	// The policy its relay refuses plaintext by (transport/relay).
	if p, ok, err := c.Policy(); err != nil || !ok || p.Plaintext != w.cfg.AllowPlaintext {
		w.t.Errorf("served card's policy: %+v %v %v, want plaintext %v", p, ok, err, w.cfg.AllowPlaintext)
	}
	// The Autonomy Envelope the device verifies (docs/envelope.md).
	if p, ok, err := c.Envelope(); err != nil || !ok || p.MaxChain != a2a.MaxPassports {
		w.t.Errorf("served card's envelope extension: %+v %v %v", p, ok, err)
	}
	return raw, doc
}

// checkPulse checks that the served pulse doc is a valid pulse by the
// agent that names the next wake of report r and mode, and returns it.
func (w *world) checkPulse(when string, doc []byte, r runtime.WakeReport, mode wake.Mode) pulse.Pulse {
	w.t.Helper()
	p, err := pulse.Parse(doc)
	if err != nil {
		w.t.Fatalf("%s: served pulse: %v", when, err)
	}
	if p.Agent != w.key.DID() || !p.NextWake.Equal(r.NextWake) || p.Mode != string(mode) {
		w.t.Errorf("%s: served pulse by %s names the next wake %v in %s, want %v in %s", when, p.Agent, p.NextWake, p.Mode, r.NextWake, mode)
	}
	return p
}

// TestThePulseNamesTheNextWake: after every wake, the pulse the relay
// serves (signed by the agent) names the next wake the agent announced,
// including one an operator moved during the wake (a new pulse at the
// announce); a mode with no planned wake names none. The card stays the
// same bytes while the mode and the bounds do.
func TestThePulseNamesTheNextWake(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	rtc, boot := w.bootSuspending()
	start, end := w.window.Next(t0)
	if !boot.NextWake.Equal(start) {
		t.Fatalf("boot wake announced %v, want %v", boot.NextWake, start)
	}
	card1, doc := w.served()
	if p := w.checkPulse("after the boot wake", doc, boot, wake.HourlyWake); p.Seq != 1 {
		t.Errorf("after the boot wake the relay serves pulse %d, want 1", p.Seq)
	}

	// The window's wake, which an operator extends by an hour: the next
	// window moves past it, and the pulse says so.
	<-rtc.asleep
	rtc.wakeup <- struct{}{}
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	if _, err := w.agent.Extend(end.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	w.clock.Set(end.Add(time.Hour))
	r := w.nextWake()
	if next, _ := w.window.Next(end.Add(time.Hour)); !r.NextWake.Equal(next) {
		t.Fatalf("extended wake announced %v, want %v", r.NextWake, next)
	}
	card2, doc2 := w.served()
	p := w.checkPulse("after the extended wake", doc2, r, wake.HourlyWake)
	if p.Seq != 3 {
		t.Errorf("after the extended wake the relay serves pulse %d, want 3 (the wake's, then the announce's)", p.Seq)
	}
	if !bytes.Equal(card1, card2) {
		t.Errorf("the card changed between two wakes in the same mode and bounds")
	}

	// always_on plans no wake: the pulse names none, and the card its mode.
	<-rtc.asleep
	if err := w.agent.SetMode(wake.AlwaysOn, time.Time{}); err != nil {
		t.Fatal(err)
	}
	w.waitPhase(runtime.PhasePublish)
	card3, doc3 := w.served()
	if p := w.checkPulse("always_on", doc3, runtime.WakeReport{}, wake.AlwaysOn); p.Seq != 4 {
		t.Errorf("always_on: the relay serves pulse %d, want 4", p.Seq)
	}
	if bytes.Equal(card3, card2) {
		t.Errorf("always_on: the relay serves the card of hourly_wake")
	}
	w.shutdown()
}

// TestRelayKnowsTheWakeSecond: the agent's window opens at its DID's wake
// second (wake.WakeSecond), and the window it publishes makes the relay,
// which knows only the minute and an offset, compute the same start, so its
// Retry-After and the card's next window point at the second the device
// really wakes.
func TestRelayKnowsTheWakeSecond(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	if w.window.Second == 0 {
		t.Fatal("the test key's wake second is 0: the test could not tell it from the minute's :00")
	}
	w.run()
	r := w.nextWake() // boot
	st, err := w.states.Get(context.Background(), w.key.DID().String())
	if err != nil {
		t.Fatal(err)
	}
	now := w.clock.Now()
	want, wantEnd := w.window.Next(now)
	got, gotEnd := st.Window.Next(now)
	if !got.Equal(want) || !gotEnd.Equal(wantEnd) {
		t.Errorf("relay's window %+v: next %s..%s, want %s..%s", st.Window, got, gotEnd, want, wantEnd)
	}
	if !r.NextWake.Equal(want) || r.NextWake.Second() != w.window.Second {
		t.Errorf("next wake %s, want %s (second %d)", r.NextWake, want, w.window.Second)
	}
	// Asleep, every Retry-After lands inside that window.
	alice := runtimetest.Key(t, 1)
	for range 20 {
		code, ra := w.send(alice, runtimetest.Object(t, alice, "comms:message", now, time.Hour, nil))
		at := now.Add(time.Duration(ra) * time.Second)
		if code != 503 || at.Before(want) || !at.Before(wantEnd) {
			t.Fatalf("asleep answer %d, Retry-After %d s: %s, outside %s..%s", code, ra, at, want, wantEnd)
		}
	}
	w.shutdown()
}

// sentState is what one state frame carried, on which of the agent's
// links.
type sentState struct {
	link                int
	card, pulse, status bool
}

// statesLink records the state frames its agent publishes.
type statesLink struct {
	runtime.Link
	n   int
	mu  *sync.Mutex
	out *[]sentState
}

func (l statesLink) Publish(ctx context.Context, st wire.State) (wire.Accepted, error) {
	l.mu.Lock()
	*l.out = append(*l.out, sentState{link: l.n, card: st.Card != nil, pulse: st.Pulse != nil, status: st.Status != nil})
	l.mu.Unlock()
	return l.Link.Publish(ctx, st)
}

// Traffic passes on the client's count (runtime reads it from a Link
// that has it).
func (l statesLink) Traffic() link.Traffic { return l.Link.(*link.Client).Traffic() }

// recordStates makes w's agent dial through statesLink; take returns the
// frames sent since its last call.
func (w *world) recordStates() (take func() []sentState) {
	return w.recordStatesThrough(func(l statesLink) runtime.Link { return l })
}

// recordStatesThrough is recordStates with each statesLink wrapped by
// wrap.
func (w *world) recordStatesThrough(wrap func(statesLink) runtime.Link) (take func() []sentState) {
	var mu sync.Mutex
	var out []sentState
	links := 0
	w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
		l, err := link.Dial(ctx, c)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		links++
		n := links
		mu.Unlock()
		return wrap(statesLink{Link: l, n: n, mu: &mu, out: &out}), nil
	}
	return func() []sentState {
		mu.Lock()
		defer mu.Unlock()
		got := out
		out = nil
		return got
	}
}

// TestAnUnchangedStateSendsNoCard: the card goes to the relay once; later
// wakes send only their pulse, for the relay's state-ok named the card it
// holds (wire.Accepted.CardDigest), and the relay goes on serving it. The
// announce after an empty wake, which would say nothing new since the last
// state the relay accepted on its link (no card, no pulse, a status of the
// same content, the same schedule), is not sent; the first frame on a new
// link, after the relay dropped the old one, carries the pulse and the
// status again. Every wake reports the bytes its links sent and received.
func TestAnUnchangedStateSendsNoCard(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	take := w.recordStates()
	rtc, boot := w.bootSuspending()
	want := []sentState{{1, true, true, true}}
	if got := take(); !slices.Equal(got, want) {
		t.Errorf("boot wake sent states %+v, want %+v (card, pulse and status; no announce)", got, want)
	}
	if boot.LinkSent == 0 || boot.LinkReceived == 0 {
		t.Errorf("boot wake reports %d bytes sent and %d received on its link", boot.LinkSent, boot.LinkReceived)
	}
	card1, doc := w.served()
	w.checkPulse("after the boot wake", doc, boot, wake.HourlyWake)

	// The window's wake; the relay drops its link once it published.
	<-rtc.asleep
	rtc.wakeup <- struct{}{}
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	if !w.relay.Link().Drop(w.key.DID().String(), "test: dropped") {
		t.Fatal("the relay had no link to drop")
	}
	w.waitPhase(runtime.PhasePublish) // on the new link
	_, end := w.window.Next(t0)
	w.clock.Set(end)
	r := w.nextWake()
	want = []sentState{{2, false, true, true}, {3, false, true, true}}
	if got := take(); !slices.Equal(got, want) {
		t.Errorf("window wake sent states %+v, want %+v", got, want)
	}
	if r.LinkSent <= boot.LinkSent/4 || r.LinkSent >= boot.LinkSent || r.LinkAttempts != 2 {
		t.Errorf("window wake over two links without the card: %d attempts, %d bytes sent (the boot wake's one link with it: %d)", r.LinkAttempts, r.LinkSent, boot.LinkSent)
	}
	card2, doc := w.served()
	if p := w.checkPulse("after the window wake", doc, r, wake.HourlyWake); p.Seq != 2 {
		t.Errorf("after the window wake the relay serves pulse %d, want 2", p.Seq)
	}
	if !bytes.Equal(card1, card2) {
		t.Error("the relay serves another card after the window wake")
	}
	if st := w.status(); st.Wake == nil || !st.Wake.At.Equal(r.At) {
		t.Errorf("the relay's status names wake %+v, want the window wake at %v", st.Wake, r.At)
	}
	w.shutdown()
}

// TestAStoreChangeDuringTheWindowIsAnnounced: the announce decides from
// what the wake's first state sent whether the relay holds all it would
// say, and a change committed to the store during the window (a halt
// here, made on the pipeline, which asks for no restated status) is read
// again and announced: the status is sent, and the relay holds the halt.
func TestAStoreChangeDuringTheWindowIsAnnounced(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	take := w.recordStates()
	rtc, _ := w.bootSuspending()
	take()
	<-rtc.asleep
	rtc.wakeup <- struct{}{}
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	if err := w.agent.Pipeline().Halt("tester", "lost phone"); err != nil {
		t.Fatal(err)
	}
	_, end := w.window.Next(t0)
	w.clock.Set(end)
	w.nextWake()
	want := []sentState{{2, false, true, true}, {2, false, false, true}}
	if got := take(); !slices.Equal(got, want) {
		t.Errorf("window wake sent states %+v, want %+v (the first state, then the announce with the status)", got, want)
	}
	if st := w.status(); !st.Halted {
		t.Errorf("the relay's status after the window: %+v; want it halted", st)
	}
	w.shutdown()
}

// TestTheCardFollowsWhenTheRelayLostIt: a relay whose store lost the card
// (restored from an older copy, say) names none in its state-ok to the
// state that left it out, and the device sends the card at once in a
// second frame; the relay serves it again.
func TestTheCardFollowsWhenTheRelayLostIt(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	take := w.recordStates()
	rtc, _ := w.bootSuspending()
	card1, _ := w.served()
	take()
	<-rtc.asleep
	ctx, id := context.Background(), w.key.DID().String()
	st, err := w.states.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	st.Card = nil
	if err := w.states.Put(ctx, id, st, nil, nil); err != nil {
		t.Fatal(err)
	}
	rtc.wakeup <- struct{}{}
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	want := []sentState{{2, false, true, true}, {2, true, false, false}}
	if got := take(); !slices.Equal(got, want) {
		t.Errorf("wake sent states %+v, want %+v (no card, then the card)", got, want)
	}
	if card2, _ := w.served(); !bytes.Equal(card1, card2) {
		t.Error("the relay serves another card than the one it lost")
	}
	w.shutdown()
}

// digestlessLink is a link to a relay that predates
// wire.Accepted.CardDigest: its state-ok names no card.
type digestlessLink struct{ statesLink }

func (l digestlessLink) Publish(ctx context.Context, st wire.State) (wire.Accepted, error) {
	ok, err := l.statesLink.Publish(ctx, st)
	ok.CardDigest = nil
	return ok, err
}

// TestARelayThatNamesNoCardGetsItEveryWake: with a relay that does not
// say which card it holds, the device cannot know it kept it, and sends
// the card in the first state of every wake (signed once), but not twice
// on one link.
func TestARelayThatNamesNoCardGetsItEveryWake(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	take := w.recordStatesThrough(func(l statesLink) runtime.Link { return digestlessLink{l} })
	rtc, _ := w.bootSuspending()
	<-rtc.asleep
	w.alarmWake(rtc, t0)
	got := take()
	want := []sentState{{1, true, true, true}, {2, true, true, true}}
	if !slices.Equal(got, want) {
		t.Errorf("two wakes sent states %+v, want %+v", got, want)
	}
	w.served()
	w.shutdown()
}

// heldLink records whether each state-ok named the KeyPackages held.
type heldLink struct {
	runtime.Link
	mu    *sync.Mutex
	named *[]bool
}

func (l heldLink) Publish(ctx context.Context, st wire.State) (wire.Accepted, error) {
	ok, err := l.Link.Publish(ctx, st)
	if err == nil {
		l.mu.Lock()
		*l.named = append(*l.named, ok.Held != nil)
		l.mu.Unlock()
	}
	return ok, err
}

// TestAKnownHeldIsNotSentAgain: the relay names the KeyPackages it holds
// in the boot wake's first state-ok; the next wake, on a new link, names
// the set the agent learnt (wire.State.HeldDigest), and the relay, which
// holds the same, leaves them out. A KeyPackage fetched meanwhile makes
// it name them again, and the agent replaces it.
func TestAKnownHeldIsNotSentAgain(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.withMLS()
	var mu sync.Mutex
	var named []bool
	w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
		l, err := link.Dial(ctx, c)
		if err != nil {
			return nil, err
		}
		return heldLink{Link: l, mu: &mu, named: &named}, nil
	}
	take := func() []bool {
		mu.Lock()
		defer mu.Unlock()
		got := named
		named = nil
		return got
	}
	w.newAgent()
	w.run()
	w.nextWake() // boot
	if got := take(); len(got) == 0 || !got[0] {
		t.Fatalf("boot wake's state-oks named Held %v, want the first to", got)
	}
	w.wakeThroughWindow()
	if got := take(); !slices.Equal(got, []bool{false}) {
		t.Errorf("an empty wake's state-oks named Held %v, want neither", got)
	}
	if status, _, last := w.takeKeyPackage(); status != http.StatusOK || last {
		t.Fatalf("fetch = %d, last resort %v", status, last)
	}
	w.wakeThroughWindow()
	if got := take(); len(got) < 2 || !got[0] {
		t.Errorf("after a fetch, the wake's state-oks named Held %v, want the first to, and the replacement published", got)
	}
	w.shutdown()
}
