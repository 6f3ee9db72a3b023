package runtime_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/transport/a2a"
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
