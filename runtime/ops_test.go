package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/wake"
)

// TestSetWindowPersists: a window set at runtime re-plans at once, holds
// across a restart, and gives way when the configured window changes.
func TestSetWindowPersists(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.run()
	w.nextWake() // boot
	if err := w.agent.SetWindow(time.Minute, 20*time.Minute); err != nil {
		t.Fatal(err)
	}
	want := w.window
	want.Length, want.Offset = time.Minute, 20*time.Minute
	start, end := want.Next(w.clock.Now())
	if w.agent.Window() != want {
		t.Fatalf("Window() = %+v, want %+v", w.agent.Window(), want)
	}
	// Asleep, the agent re-plans for the new window (whether it had
	// re-planned already or wakes at the old timer, it opens the new one).
	w.clock.Set(start)
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	w.clock.Set(end)
	if r := w.nextWake(); !r.End.Equal(end) || r.Awake != time.Minute {
		t.Fatalf("wake in the new window: end %v, awake %v; want %v, 1m", r.End, r.Awake, end)
	}
	w.shutdown()

	w.newAgent()
	w.run()
	w.nextWake()
	if got := w.agent.Window(); got != want {
		t.Fatalf("window after a restart = %+v, want %+v", got, want)
	}
	w.shutdown()

	w.cfg.Schedule.WindowLength = 3 * time.Minute // the configuration changed: it wins
	w.newAgent()
	w.run()
	w.nextWake()
	if got := w.agent.Window(); got.Length != 3*time.Minute || got.Offset != 0 {
		t.Fatalf("window after the configuration changed = %+v, want the configured one", got)
	}
	w.shutdown()
}

// TestExtendKeepsTheWindowOpen: an operator's wake-now extends the window
// in progress; the wake ends at the new end and plans the next wake after
// it. Extend never shortens a window.
func TestExtendKeepsTheWindowOpen(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.run()
	w.nextWake() // boot
	start, end := w.window.Next(t0)
	w.clock.Set(start)
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	if got, err := w.agent.Extend(start.Add(time.Minute)); err != nil || !got.Equal(end) {
		t.Fatalf("Extend to before the end = %v, %v; want the end %v unchanged", got, err, end)
	}
	later := end.Add(10 * time.Minute)
	if got, err := w.agent.Extend(later); err != nil || !got.Equal(later) {
		t.Fatalf("Extend = %v, %v; want %v", got, err, later)
	}
	w.clock.Set(end) // the window's old end passes: the wake goes on
	w.clock.Set(later)
	r := w.nextWake()
	next, _ := w.window.Next(later)
	if !r.End.Equal(later) || r.Awake != later.Sub(start) || !r.NextWake.Equal(next) {
		t.Fatalf("extended wake: end %v, awake %v, next wake %v; want %v, %v, %v", r.End, r.Awake, r.NextWake, later, later.Sub(start), next)
	}
	if _, err := w.agent.Extend(later.Add(time.Hour)); !errors.Is(err, runtime.ErrAsleep) {
		t.Errorf("Extend while asleep = %v, want ErrAsleep", err)
	}
	w.shutdown()
}

// quietLink loses the relay's "queued" notifications, as a flaky link
// might: only an explicit drain finds what was queued meanwhile.
type quietLink struct{ runtime.Link }

func (quietLink) Queued() <-chan uint64 { return nil }

// TestDrainOnDemand: a boot wake (outside the window) that an operator
// extended stays linked; what senders queue meanwhile (outside the
// relay's window, so not forwarded live) waits unnotified until Drain,
// which drains and delivers it and reports that drain.
func TestDrainOnDemand(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
		l, err := link.Dial(ctx, c)
		if err != nil {
			return nil, err
		}
		return quietLink{l}, nil
	}
	extended := make(chan error, 1)
	onPhase := w.cfg.Hooks.OnPhase
	w.cfg.Hooks.OnPhase = func(p runtime.Phase) {
		if p.Name == runtime.PhaseLink && len(extended) == 0 {
			_, err := w.agent.Extend(t0.Add(30 * time.Minute))
			extended <- err
		}
		onPhase(p)
	}
	w.newAgent()
	w.run()
	if err := <-extended; err != nil {
		t.Fatal(err)
	}
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	alice := runtimetest.Key(t, 1)
	obj := runtimetest.Object(t, alice, "comms:message", t0, time.Hour, nil)
	if status, _ := w.send(alice, obj); status != http.StatusServiceUnavailable {
		t.Fatalf("send outside the window: %d, want 503 (queued)", status)
	}
	rep, err := w.agent.Drain(context.Background())
	if err != nil || rep.Records != 1 || rep.Accepted != 1 || rep.Delivered != 1 {
		t.Fatalf("Drain = %v, %v; want the queued record drained and delivered", rep, err)
	}
	if got := w.rec.IDs(); len(got) != 1 || got[0] != runtimetest.ObjectID(t, obj) {
		t.Fatalf("delivered %v", got)
	}
	w.clock.Set(t0.Add(30 * time.Minute))
	if r := w.nextWake(); r.Reason != "boot" || r.Drain.Accepted != 1 {
		t.Fatalf("extended boot wake: reason %s, drain %v", r.Reason, r.Drain)
	}
	if _, err := w.agent.Drain(context.Background()); !errors.Is(err, runtime.ErrAsleep) {
		t.Errorf("Drain while asleep = %v, want ErrAsleep", err)
	}
	w.shutdown()
}

// relayPulse returns the latest pulse the relay serves for agent.
func relayPulse(t *testing.T, relayURL string, agent did.DID) ([]byte, pulse.Pulse) {
	t.Helper()
	resp, err := http.Get(relayURL + "/a/" + agent.String() + "/pulse")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, _ := io.ReadAll(resp.Body)
	p, err := pulse.Parse(doc)
	if err != nil {
		t.Fatalf("pulse of %s at the relay: %v (%s)", agent, err, doc)
	}
	return doc, p
}

// TestRotateKey: in a window, the agent drains its old identity's queue,
// tells the relay that identity is retired (the handover the old key
// signed), writes the new key file and restarts; the relay answers the old
// DID's senders 410 Gone naming the new DID. Started again with the new
// key, the agent drops the old MLS state, continues the pulse chain, keeps
// its window, and publishes its card, pulse and KeyPackages under the new
// DID, with which a sender establishes a fresh session.
func TestRotateKey(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	keyFile := filepath.Join(w.dir, "agent.key")
	if err := did.SaveKey(keyFile, w.key, false); err != nil {
		t.Fatal(err)
	}
	w.cfg.Store.KeyFile = keyFile
	w.withMLS()
	w.run()
	w.nextWake() // boot
	alice := runtimetest.Key(t, 1)
	client, err := sender.Open(filepath.Join(t.TempDir(), "alice", "sessions.db"), alice, nil, w.clock)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	r := &rotation{world: w, alice: alice, client: client}
	old, next := w.key, runtimetest.Key(t, 12)
	if d := r.send(old.DID()); !d.Queued {
		t.Fatalf("send to the sleeping agent: %+v, want queued", d)
	}
	start, _ := w.window.Next(t0)
	w.clock.Set(start)
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	if n := len(w.rec.IDs()); n != 1 {
		t.Fatalf("delivered %d objects in the window, want 1", n)
	}
	oldHead, oldPulse := relayPulse(t, w.srv.URL, old.DID())
	r.rotate(keyFile, old.DID(), next)

	w.key, w.cfg.Key = next, next
	w.newAgent()
	w.run()
	// It boots inside the window it kept, and stays awake to its end.
	w.waitPhase(runtime.PhasePublish)
	// The wake's pulse, before the announce makes another for the window
	// the relay assigns the new DID (rotatedWindow).
	_, p := relayPulse(t, w.srv.URL, next.DID())
	_, end := w.window.Next(w.clock.Now())
	w.clock.Set(end)
	boot := w.nextWake()
	if boot.Reason != "boot" || boot.LinkErr != "" {
		t.Fatalf("boot under the new key: %+v", boot)
	}
	w.window = w.rotatedWindow(next.DID())
	if p.Agent != next.DID() || p.Seq != oldPulse.Seq+1 || p.Prev != pulse.Hash(oldHead) {
		t.Fatalf("first pulse of the new identity %+v; want seq %d linked to the old identity's last pulse", p, oldPulse.Seq+1)
	}
	r.newSession(next.DID())
	w.shutdown()

	// A key file changed without a rotation is refused.
	w.cfg.Key = runtimetest.Key(t, 13)
	w.newAgent()
	if err := w.agent.Run(context.Background()); err == nil {
		t.Fatal("Run with another key over the store = nil, want an error")
	}
}

// rotatedWindow checks and returns the agent's window after a rotation
// to next: the old DID's wake minute, not the new one's, at the second
// the relay assigned the new DID in that minute.
func (w *world) rotatedWindow(next did.DID) wake.Window {
	w.t.Helper()
	want := w.window
	st, err := w.states.Get(context.Background(), next.String())
	if err != nil || !st.WakeSecondSet {
		w.t.Fatalf("the relay assigned the new DID no wake second: %+v, %v", st, err)
	}
	want.Second = st.WakeSecond
	if got := w.agent.Window(); got != want || wake.WakeMinute(next.String()) == w.window.Minute {
		w.t.Fatalf("window after the rotation %+v, want %+v (the first identity's minute)", got, want)
	}
	return want
}

// rotation is TestRotateKey's world: the agent and alice, who sends to it
// in MLS sessions.
type rotation struct {
	*world
	alice  *did.PrivateKey
	client *sender.Client
}

// send sends an object from alice to the agent with DID to.
func (r *rotation) send(to did.DID) *sender.Delivery {
	r.t.Helper()
	o := runtimetest.Object(r.t, r.alice, "comms:message", r.clock.Now(), 2*time.Hour, nil)
	d, err := r.client.Send(context.Background(), sender.RelayPeer(r.srv.URL, to), json.RawMessage(o))
	if err != nil {
		r.t.Fatalf("send to %s: %v", to, err)
	}
	return d
}

// rotate rotates the agent's key from old to next in the window in
// progress and checks the restart, the key file, the old identity asleep
// for good and the rotating wake's report.
func (r *rotation) rotate(keyFile string, old did.DID, next *did.PrivateKey) {
	t := r.t
	t.Helper()
	if err := r.agent.RotateKey(context.Background(), next, handover(t, r.key, next.DID())); err != nil {
		t.Fatal(err)
	}
	if err := <-r.done; !errors.Is(err, runtime.ErrRestart) {
		t.Fatalf("Run after RotateKey = %v, want ErrRestart", err)
	}
	if k, err := did.LoadKey(keyFile); err != nil || k.DID() != next.DID() {
		t.Fatalf("key file after the rotation holds %v (%v), want %s", k, err, next.DID())
	}
	o := runtimetest.Object(t, r.alice, "comms:message", r.clock.Now(), 2*time.Hour, nil)
	_, err := r.client.Send(context.Background(), sender.RelayPeer(r.srv.URL, old), json.RawMessage(o))
	var he *sender.HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusGone || !bytes.Contains(he.Body, []byte(`"successor":"`+next.DID().String()+`"`)) {
		t.Fatalf("send to the old identity: %v; want 410 Gone naming the successor %s", err, next.DID())
	}
	if rep := <-r.wakes; hasPhase(rep, runtime.PhaseAnnounce) || rep.Drain.Delivered != 1 {
		t.Fatalf("the rotating wake: %+v; want its object delivered and nothing announced after the rotation", rep)
	}
}

// handover is the statement in which old names next its successor, as
// runtime/manage's rotate-keys signs it.
func handover(t *testing.T, old *did.PrivateKey, next did.DID) []byte {
	t.Helper()
	o, err := governed.Sign(old, governed.Template{IssuedAt: t0, Semantic: governed.Semantic{Schema: manage.SchemaKeyHandover},
		Payload: map[string]string{"old": old.DID().String(), "new": next.String()}, Purpose: manage.PurposeKeyHandover})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := o.MarshalJSON()
	return b
}

// newSession sends to the new identity next and checks that its window
// joins a fresh session and delivers the object.
func (r *rotation) newSession(next did.DID) {
	t := r.t
	t.Helper()
	d := r.send(next)
	nstart, nend := r.window.Next(r.clock.Now())
	if nstart.Before(r.clock.Now()) {
		// The window at the second the relay assigned opened before the
		// boot wake ended: that wake was this hour's; the next is next
		// hour's.
		nstart, nend = r.window.Next(nend)
	}
	if !d.Queued || !r.clock.Now().Before(nstart) {
		t.Fatalf("send to the new identity: %+v (its window opens %v); want queued for its window", d, nstart)
	}
	r.clock.Set(nstart)
	r.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	r.clock.Set(nend)
	rep := r.nextWake()
	if rep.Drain.Handshake != 1 || rep.Drain.Delivered != 1 || rep.Drain.RejectedTotal() != 0 {
		t.Fatalf("the new identity's window: drain %v; want a fresh session joined and the object delivered", rep.Drain)
	}
}

// TestWindowAndWakeNowOverMQTT: set-mode changes the window (persisted,
// announced) and wake-now extends the window in progress.
func TestWindowAndWakeNowOverMQTT(t *testing.T) {
	w := newCmdWorld(t, wake.HourlyWake)
	w.Run()
	w.NextWake() // boot
	start, _ := w.Window.Next(cmdStart)
	id := w.Send(command.OpSetMode, &command.SetModeArgs{Mode: "hourly_wake", WindowSec: ptrTo(int64(600)), OffsetSec: ptrTo(int64(0))})
	w.Clock.Set(start)
	r := w.Reply(id)
	var res struct{ Window envelope.Window }
	if r.Outcome != command.OutcomeOK || json.Unmarshal(r.Result, &res) != nil || res.Window.LengthSec != 600 {
		t.Fatalf("set-mode with a window: %+v %s", r, r.Result)
	}
	if got := w.Agent.Window(); got.Length != 10*time.Minute {
		t.Fatalf("window = %+v, want 10m", got)
	}
	w.NextWake() // the wake ends on the change and the agent re-plans into the longer window
	w.WaitPhase(runtime.PhasePublish)
	now := w.Clock.Now()
	r = w.Command(command.OpWakeNow, &command.WakeNowArgs{ForSec: 3600})
	var wn struct{ Until time.Time }
	if r.Outcome != command.OutcomeOK || json.Unmarshal(r.Result, &wn) != nil || !wn.Until.Equal(now.Add(time.Hour)) {
		t.Fatalf("wake-now = %+v %s; want awake until %v", r, r.Result, now.Add(time.Hour))
	}
	r = w.Command(command.OpDrain, nil)
	if r.Outcome != command.OutcomeOK {
		t.Fatalf("drain = %+v", r)
	}
}

// TestRebootOverMQTT: the reboot command is answered, then the agent's
// Run ends with ErrRestart (the binary exits for systemd to restart it).
func TestRebootOverMQTT(t *testing.T) {
	w := newCmdWorldWith(t, wake.AlwaysOn, func(w *cmdWorld, _ *runtime.Config, cc *manage.CommandsConfig) {
		cc.Reboot = func() error { w.Agent.Restart("reboot command"); return nil }
	})
	w.Run()
	w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAwake })
	if r := w.Command(command.OpReboot, &command.RebootArgs{}); r.Outcome != command.OutcomeOK {
		t.Fatalf("reboot = %+v", r)
	}
	err := <-w.Done
	w.Done <- err // for the cleanup
	if !errors.Is(err, runtime.ErrRestart) {
		t.Fatalf("Run after reboot = %v, want ErrRestart", err)
	}
	w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateStopped })
}

// TestRotateKeysOverMQTT: rotate-keys answers with the old and new DIDs
// and the handover the old key signed; the new key is in the key file and
// the agent restarts.
func TestRotateKeysOverMQTT(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "agent.key")
	w := newCmdWorldWith(t, wake.AlwaysOn, func(w *cmdWorld, cfg *runtime.Config, cc *manage.CommandsConfig) {
		if err := did.SaveKey(keyFile, w.Key, false); err != nil {
			t.Fatal(err)
		}
		cfg.Store.KeyFile = keyFile
		cc.RotateKey = func(ctx context.Context, k *did.PrivateKey, h []byte) error { return w.Agent.RotateKey(ctx, k, h) }
	})
	w.Run()
	w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAwake })
	r := w.Command(command.OpRotateKeys, nil)
	var res struct {
		Old, New string
		Handover json.RawMessage
	}
	if r.Outcome != command.OutcomeOK || json.Unmarshal(r.Result, &res) != nil || res.Old != w.Key.DID().String() || len(res.Handover) == 0 {
		t.Fatalf("rotate-keys = %+v %s", r, r.Result)
	}
	checkHandover(t, res.Handover, w.Key.DID(), res.New, "pi-7")
	err := <-w.Done
	w.Done <- err
	if !errors.Is(err, runtime.ErrRestart) {
		t.Fatalf("Run after rotate-keys = %v, want ErrRestart", err)
	}
	if k, err := did.LoadKey(keyFile); err != nil || k.DID().String() != res.New {
		t.Fatalf("key file holds %v (%v), want %s", k, err, res.New)
	}
}

// checkHandover checks a key handover as a relying party would: it is
// signed by old (the identity it hands over from) and names next as the
// device's identity from now on.
func checkHandover(t *testing.T, handover []byte, old did.DID, next, device string) {
	t.Helper()
	if err := verifyHandover(handover, old, next, device); err != nil {
		t.Fatalf("handover %s: %v", handover, err)
	}
	// The checks can fail: not under the new key, and not once the
	// statement names another DID.
	nextDID, err := did.Parse(next)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyHandover(handover, nextDID, next, device); err == nil {
		t.Fatal("the handover verifies as signed by the new key")
	}
	other := runtimetest.Key(t, 14).DID().String()
	forged := bytes.ReplaceAll(handover, []byte(`"new":"`+next+`"`), []byte(`"new":"`+other+`"`))
	if bytes.Equal(forged, handover) {
		t.Fatalf("no \"new\":%q member in the handover %s", next, handover)
	}
	if err := verifyHandover(forged, old, other, device); err == nil {
		t.Fatal("a handover naming another DID verifies under the old key")
	}
}

// verifyHandover reports why handover is not old's signed statement that
// device's identity is next from now on.
func verifyHandover(handover []byte, old did.DID, next, device string) error {
	o, err := governed.Parse(handover)
	if err != nil {
		return err
	}
	if !old.Verify(o.SignedBytes(), o.Signature) {
		return fmt.Errorf("the signature does not verify under the old key %s", old)
	}
	if o.Issuer != old {
		return fmt.Errorf("issuer %s, want the old key %s", o.Issuer, old)
	}
	if o.Governance.Purpose != manage.PurposeKeyHandover || o.Semantic.Schema != manage.SchemaKeyHandover {
		return fmt.Errorf("purpose %q, schema %q; want a key handover", o.Governance.Purpose, o.Semantic.Schema)
	}
	var p struct{ Old, New, Device string }
	if err := json.Unmarshal(o.Payload, &p); err != nil {
		return err
	}
	if p.Old != old.String() || p.New != next || p.Device != device {
		return fmt.Errorf("payload %s; want old %s, new %s, device %s", o.Payload, old, next, device)
	}
	return nil
}

func hasPhase(r runtime.WakeReport, name string) bool {
	for _, p := range r.Phases {
		if p.Name == name {
			return true
		}
	}
	return false
}

// TestAnnounceFollowsScheduleChange: a schedule changed during a wake
// without changing the mode (sleep mode, a new scheduled wake) is what the
// wake announces, so the relay's Retry-After points at the new wake.
func TestAnnounceFollowsScheduleChange(t *testing.T) {
	w := newWorld(t, wake.Sleep)
	first := t0.Add(10 * time.Minute)
	w.cfg.Schedule.ScheduledWake = first
	w.newAgent()
	w.run()
	if boot := w.nextWake(); !boot.NextWake.Equal(first) {
		t.Fatalf("boot announced %v, want %v", boot.NextWake, first)
	}
	w.clock.Set(first)
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	later := t0.Add(3 * time.Hour)
	if err := w.agent.SetMode(wake.Sleep, later); err != nil {
		t.Fatal(err)
	}
	r := w.nextWake()
	if !r.NextWake.Equal(later) {
		t.Fatalf("the wake announced next wake %v, want the new scheduled wake %v", r.NextWake, later)
	}
	alice := runtimetest.Key(t, 1)
	status, ra := w.send(alice, runtimetest.Object(t, alice, "comms:message", w.clock.Now(), time.Hour, nil))
	if at := w.clock.Now().Add(time.Duration(ra) * time.Second); status != http.StatusServiceUnavailable || at.Before(later) || at.After(later.Add(w.window.Length)) {
		t.Fatalf("send after the change: %d, Retry-After %d s (lands %v); want 503 landing at the new wake %v", status, ra, at, later)
	}
	w.shutdown()
}

// detailSource wakes at until on the test's clock and says how it knows,
// as the RTC source does from the kernel's wakeup IRQ. waiting receives
// once the agent sleeps on it, its timer armed.
type detailSource struct {
	w       *world
	waiting chan struct{}
}

func (s detailSource) Wait(ctx context.Context, until time.Time) (wake.Wake, error) {
	t := s.w.clock.NewTimer(until.Sub(s.w.clock.Now()))
	defer t.Stop()
	select {
	case s.waiting <- struct{}{}: // armed: the test may move the clock now
	default:
	}
	select {
	case <-t.C():
	case <-ctx.Done():
		return wake.Wake{}, ctx.Err()
	}
	return wake.Wake{Reason: wake.ReasonRTC, Source: "rtc0", At: until, IRQ: 16, Detail: "pm_wakeup_irq=16 (rtc-pl031)"}, nil
}

func (detailSource) Halt() error { return nil }

// TestWakeLogNamesTheWakeDetail: the wake source's detail (the wakeup IRQ
// and its handler) is on the "waking" and "wake" log lines and in the
// report, for an operator checking a board's wake wiring.
func TestWakeLogNamesTheWakeDetail(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	var log runtimetest.Log
	w.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	src := detailSource{w, make(chan struct{}, 1)}
	w.cfg.Schedule.Sources = []wake.Source{src}
	w.newAgent()
	w.run()
	w.nextWake()  // boot
	<-src.waiting // asleep: a clock set before would skip the sleep
	start, end := w.window.Next(t0)
	w.clock.Set(start)
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	w.clock.Set(end)
	r := w.nextWake()
	w.shutdown()
	if r.Reason != "rtc" || r.WakeDetail != "pm_wakeup_irq=16 (rtc-pl031)" {
		t.Fatalf("report: reason %s, detail %q", r.Reason, r.WakeDetail)
	}
	for _, msg := range []string{"waking", "wake"} {
		if !strings.Contains(log.String(), "msg="+msg+" component=agent reason=rtc wakeDetail=\"pm_wakeup_irq=16 (rtc-pl031)\"") {
			t.Errorf("no %q line with the wake detail in the log:\n%s", msg, log.String())
		}
	}
}
