package runtime_test

import (
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
// the card must verify under the agent's DID.
func (w *world) served() (a2a.Liveness, []byte) {
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
	lv, ok, err := c.Liveness()
	if err != nil || !ok {
		w.t.Fatalf("served card's liveness extension: %v, %v", ok, err)
	}
	// The policy its relay refuses plaintext by (transport/relay).
	if p, ok, err := c.Policy(); err != nil || !ok || p.Plaintext != w.cfg.AllowPlaintext {
		w.t.Errorf("served card's policy: %+v %v %v, want plaintext %v", p, ok, err, w.cfg.AllowPlaintext)
	}
	// The Autonomy Envelope the device verifies (docs/envelope.md).
	if p, ok, err := c.Envelope(); err != nil || !ok || p.MaxChain != a2a.MaxPassports {
		w.t.Errorf("served card's envelope extension: %+v %v %v", p, ok, err)
	}
	return lv, doc
}

// checkLiveness checks that lv names the pulse doc, by hash and sequence
// number, at the relay's pulse URL, and the next window of report r.
func (w *world) checkLiveness(when string, lv a2a.Liveness, doc []byte, r runtime.WakeReport) {
	w.t.Helper()
	p, err := pulse.Parse(doc)
	if err != nil {
		w.t.Fatalf("%s: served pulse: %v", when, err)
	}
	wantURL := w.srv.URL + "/a/" + w.key.DID().String() + "/pulse"
	if lv.Pulse.Hash != pulse.Hash(doc) || lv.Pulse.Seq != p.Seq || lv.Pulse.URL != wantURL {
		w.t.Errorf("%s: card names pulse %+v; the relay serves pulse %d with hash %s at %s", when, lv.Pulse, p.Seq, pulse.Hash(doc), wantURL)
	}
	if r.NextWake.IsZero() {
		if lv.NextWindow != nil {
			w.t.Errorf("%s: card names the next window %+v, but the agent plans none", when, *lv.NextWindow)
		}
		return
	}
	if lv.NextWindow == nil || !lv.NextWindow.Start.Equal(r.NextWake) || lv.NextWindow.Length != w.window.Length {
		w.t.Errorf("%s: card names the next window %+v, want %v for %v", when, lv.NextWindow, r.NextWake, w.window.Length)
	}
}

// TestCardNamesThePulseAndTheNextWindow: after every wake, the card the
// relay serves (signed by the agent) names the pulse the relay serves and
// the next window the agent announced, including one an operator moved
// during the wake; a mode with no planned wake names none.
func TestCardNamesThePulseAndTheNextWindow(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	rtc, boot := w.bootSuspending()
	start, end := w.window.Next(t0)
	if !boot.NextWake.Equal(start) {
		t.Fatalf("boot wake announced %v, want %v", boot.NextWake, start)
	}
	lv, doc := w.served()
	w.checkLiveness("after the boot wake", lv, doc, boot)
	if lv.Pulse.Seq != 1 {
		t.Errorf("after the boot wake the card names pulse %d, want 1", lv.Pulse.Seq)
	}

	// The window's wake, which an operator extends by an hour: the next
	// window moves past it, and the card says so.
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
	lv, doc = w.served()
	w.checkLiveness("after the extended wake", lv, doc, r)
	if lv.Pulse.Seq != 2 {
		t.Errorf("after the second wake the card names pulse %d, want 2", lv.Pulse.Seq)
	}

	// always_on plans no wake: the card names the pulse and no window.
	<-rtc.asleep
	if err := w.agent.SetMode(wake.AlwaysOn, time.Time{}); err != nil {
		t.Fatal(err)
	}
	w.waitPhase(runtime.PhasePublish)
	lv, doc = w.served()
	w.checkLiveness("always_on", lv, doc, runtime.WakeReport{})
	if lv.Pulse.Seq != 3 {
		t.Errorf("always_on: the card names pulse %d, want 3", lv.Pulse.Seq)
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
		return statesLink{Link: l, n: n, mu: &mu, out: &out}, nil
	}
	return func() []sentState {
		mu.Lock()
		defer mu.Unlock()
		got := out
		out = nil
		return got
	}
}

// TestAnUnchangedStateSendsNoCard: a state frame that announces nothing
// new since the last one on its link (the announce after an empty wake)
// carries neither the card, nor the pulse, nor a status of the same
// content, and the relay goes on serving the ones it has, which agree;
// the first frame on a new link, after the relay dropped the old one,
// carries all three again. Every wake reports the bytes its links sent
// and received.
func TestAnUnchangedStateSendsNoCard(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	take := w.recordStates()
	rtc, boot := w.bootSuspending()
	want := []sentState{{1, true, true, true}, {1, false, false, false}}
	if got := take(); !slices.Equal(got, want) {
		t.Errorf("boot wake sent states %+v, want %+v (card, pulse and status, then none)", got, want)
	}
	if boot.LinkSent == 0 || boot.LinkReceived == 0 {
		t.Errorf("boot wake reports %d bytes sent and %d received on its link", boot.LinkSent, boot.LinkReceived)
	}
	lv, doc := w.served()
	w.checkLiveness("after the boot wake", lv, doc, boot)

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
	want = []sentState{{2, true, true, true}, {3, true, true, true}, {3, false, false, false}}
	if got := take(); !slices.Equal(got, want) {
		t.Errorf("window wake sent states %+v, want %+v", got, want)
	}
	if r.LinkSent <= boot.LinkSent/2 || r.LinkAttempts != 2 {
		t.Errorf("window wake over two links: %d attempts, %d bytes sent (the boot wake's one link: %d)", r.LinkAttempts, r.LinkSent, boot.LinkSent)
	}
	lv, doc = w.served()
	w.checkLiveness("after the window wake", lv, doc, r)
	if lv.Pulse.Seq != 2 {
		t.Errorf("after the window wake the card names pulse %d, want 2", lv.Pulse.Seq)
	}
	if st := w.status(); st.Wake == nil || !st.Wake.At.Equal(r.At) {
		t.Errorf("the relay's status names wake %+v, want the window wake at %v", st.Wake, r.At)
	}
	w.shutdown()
}
