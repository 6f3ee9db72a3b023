package console

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/wake"
)

var t0 = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

// fixture is a Source over real bbolt stores with a set of linked agents.
type fixture struct {
	src    *Source
	states *agents.Bolt
	q      *queue.Bolt
	linked map[string]bool
	// awaiting are the agents on probation (Source.Admitted).
	awaiting map[string]bool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{linked: map[string]bool{}, awaiting: map[string]bool{}}
	var err error
	if f.states, err = agents.OpenBolt(filepath.Join(dir, "agents.db"), nil); err != nil {
		t.Fatal(err)
	}
	if f.q, err = queue.OpenBolt(filepath.Join(dir, "queue.db"), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.states.Close(); f.q.Close() })
	f.src = &Source{States: f.states, Queue: f.q, Grace: 5 * time.Minute,
		Up:       func(_ context.Context, a string) bool { return f.linked[a] },
		Bounds:   func(string, agents.State) queuebounds.Bounds { return queuebounds.Default() },
		Admitted: func(_ context.Context, a string) bool { return !f.awaiting[a] }}
	return f
}

// device is one agent to put: its name, mode, next wake, status.
type device struct {
	key      *did.PrivateKey
	name     string
	mode     wake.Mode
	next     time.Time
	status   *wire.Status
	pulseAt  time.Time
	linked   bool
	lastRes  bool
	kps      int
	messages int
}

func (f *fixture) put(t *testing.T, d device) {
	t.Helper()
	id := d.key.DID().String()
	st := agents.State{Mode: d.mode, Window: wake.WindowFor(id), NextWake: d.next, UpdatedAt: t0.Add(-time.Hour),
		Card: []byte(`{"name":"` + d.name + `"}`), Bounds: queuebounds.Default()}
	if d.status != nil {
		o, err := governed.Sign(d.key, governed.Template{IssuedAt: t0, Semantic: governed.Semantic{Schema: wire.StatusSchema}, Purpose: wire.PurposeStatus, Payload: *d.status})
		if err != nil {
			t.Fatal(err)
		}
		st.Status, _ = o.MarshalJSON()
	}
	if !d.pulseAt.IsZero() {
		doc, err := pulse.Sign(d.key, pulse.Pulse{Agent: d.key.DID(), Seq: 1, At: d.pulseAt, Mode: string(d.mode)})
		if err != nil {
			t.Fatal(err)
		}
		st.Pulse = doc
	}
	var kps [][]byte
	for i := range d.kps {
		kps = append(kps, []byte{0, 1, 0, 5, byte(i)})
	}
	var lr []byte
	if d.lastRes {
		lr = []byte{0, 1, 0, 5, 0xff}
	}
	if err := f.states.Put(context.Background(), id, st, kps, lr); err != nil {
		t.Fatal(err)
	}
	for i := range d.messages {
		r := queue.Record{Agent: id, From: "did:key:zSender", Body: make([]byte, 1000)}
		if _, err := f.q.Enqueue(context.Background(), r, queuebounds.Default(), t0.Add(-time.Duration(10-i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	f.linked[id] = d.linked
}

// TestBuildStates: each device gets the state its schedule and link say,
// the summary counts them, duplicate names are flagged and the table is
// sorted most urgent first.
func TestBuildStates(t *testing.T) {
	f := newFixture(t)
	keys := []*did.PrivateKey{didtest.Key(t, 1), didtest.Key(t, 2), didtest.Key(t, 3), didtest.Key(t, 4), didtest.Key(t, 5)}
	held := &wire.Status{Version: "1.0", Board: "rpi4", HeldCount: 2, Held: []wire.StatusHeld{{Key: "did:key:zS k1"}, {Key: "did:key:zS k2"}},
		LostCount: 3, Lost: []wire.StatusLost{{ObjectID: "o1", Issuer: "did:key:zS", Purpose: "comms:message", Seq: 7}},
		Wake: &wire.StatusWake{At: t0.Add(-time.Hour), Reason: "rtc"}, LastWake: &wire.StatusWake{At: t0.Add(-2 * time.Hour), Reason: "boot", AwakeMs: 840}}
	f.put(t, device{key: keys[0], name: "pump", mode: wake.HourlyWake, next: t0.Add(10 * time.Minute), status: held, pulseAt: t0.Add(-time.Hour), messages: 3, kps: 2})
	f.put(t, device{key: keys[1], name: "pump", mode: wake.AlwaysOn, linked: true, lastRes: true})
	f.put(t, device{key: keys[2], name: "gate", mode: wake.Sleep, next: t0.Add(-10 * time.Minute), lastRes: true})
	f.put(t, device{key: keys[3], name: "shed", mode: wake.Sleep})
	f.put(t, device{key: keys[4], name: "fence", mode: wake.Session, linked: true, status: &wire.Status{Version: "1.0", Halted: true}})
	fl, err := f.src.Build(context.Background(), t0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, state string }{{"gate", operatorapi.StateOverdue}, {"fence", operatorapi.StateHalted}, {"pump", operatorapi.StateAwake}, {"pump", operatorapi.StateAsleep}, {"shed", operatorapi.StateOffline}}
	if len(fl.Devices) != len(want) {
		t.Fatalf("%d devices, want %d", len(fl.Devices), len(want))
	}
	for i, w := range want {
		if d := fl.Devices[i]; d.Name != w.name || d.State != w.state || d.DuplicateName != (w.name == "pump") {
			t.Errorf("row %d = %s %s (duplicate %v), want %s %s", i, d.Name, d.State, d.DuplicateName, w.name, w.state)
		}
	}
	wantSum := operatorapi.Summary{Devices: 5, Awake: 1, Asleep: 1, Offline: 1, Overdue: 1, Halted: 1, WithHeld: 1}
	if fl.Summary != wantSum {
		t.Errorf("summary %+v, want %+v", fl.Summary, wantSum)
	}
	pump := fl.Devices[3]
	if pump.Version != "1.0" || pump.Board != "rpi4" || pump.HeldCount != 2 || pump.LostCount != 3 || pump.LastWake == nil || pump.LastWake.Reason != "rtc" || pump.LastAwakeMs != 840 {
		t.Errorf("asleep pump from its status: %+v", pump)
	}
	if pump.Queue.Messages != 3 || pump.Queue.Bytes != 3000 || pump.Queue.OldestAge != 600 || pump.Queue.Share != 3.0/500 {
		t.Errorf("pump queue %+v, want 3 messages, 3000 bytes, oldest 600 s, share 3/500", pump.Queue)
	}
	if pump.Pulse == nil || !pump.Pulse.Verified || pump.Pulse.Seq != 1 || pump.Pulse.Age != 3600 {
		t.Errorf("pump pulse %+v, want seq 1 verified 3600 s old", pump.Pulse)
	}
	if pump.NextWindow == nil || pump.NextWindow.In != 600 || pump.NextWindow.Length != 300 {
		t.Errorf("pump next window %+v, want in 600 s for 300 s", pump.NextWindow)
	}
	if k := fl.Devices[0].KeyPackages; !k.LastResortInUse || k.Left != 0 {
		t.Errorf("gate KeyPackages %+v, want the last resort in use", k)
	}
	if k := pump.KeyPackages; k.LastResortInUse || k.Left != 2 {
		t.Errorf("pump KeyPackages %+v, want 2 left", k)
	}
	if got := fl.Filter(operatorapi.StateOverdue).Devices; len(got) != 1 || got[0].Name != "gate" {
		t.Errorf("Filter(overdue) = %v, want gate", got)
	}
}

// TestOverdueAfterGrace: a sleeping device whose announced wake passed is
// asleep within the grace and overdue after it, unless linked; an
// always_on device is overdue when its hourly pulse is late past the grace.
func TestOverdueAfterGrace(t *testing.T) {
	f := newFixture(t)
	sleeper, always := didtest.Key(t, 1), didtest.Key(t, 2)
	f.put(t, device{key: sleeper, name: "s", mode: wake.Sleep, next: t0})
	f.put(t, device{key: always, name: "a", mode: wake.AlwaysOn, pulseAt: t0.Add(-30 * time.Minute)})
	state := func(k *did.PrivateKey, at time.Time) string {
		d, err := f.src.One(context.Background(), k.DID().String(), at)
		if err != nil {
			t.Fatal(err)
		}
		return d.State
	}
	for _, c := range []struct {
		key  *did.PrivateKey
		at   time.Time
		want string
	}{
		{sleeper, t0.Add(5 * time.Minute), operatorapi.StateAsleep},
		{sleeper, t0.Add(5*time.Minute + time.Second), operatorapi.StateOverdue},
		{always, t0.Add(35 * time.Minute), operatorapi.StateOffline},
		{always, t0.Add(35*time.Minute + time.Second), operatorapi.StateOverdue},
	} {
		if got := state(c.key, c.at); got != c.want {
			t.Errorf("%s at +%v: %s, want %s", c.key.DID(), c.at.Sub(t0), got, c.want)
		}
	}
	f.linked[sleeper.DID().String()] = true
	if got := state(sleeper, t0.Add(time.Hour)); got != operatorapi.StateAwake {
		t.Errorf("linked sleeper past its wake: %s, want awake", got)
	}
}

// TestForgedStatusAndPulse: a status or pulse not signed by the device is
// not believed: the row says why and shows nothing from it.
func TestForgedStatusAndPulse(t *testing.T) {
	f := newFixture(t)
	dev, other := didtest.Key(t, 1), didtest.Key(t, 2)
	f.put(t, device{key: dev, name: "d", mode: wake.Sleep})
	id := dev.DID().String()
	st, _ := f.states.Get(context.Background(), id)
	o, _ := governed.Sign(other, governed.Template{IssuedAt: t0, Semantic: governed.Semantic{Schema: wire.StatusSchema}, Purpose: wire.PurposeStatus,
		Payload: wire.Status{Version: "9", Halted: true}})
	st.Status, _ = o.MarshalJSON()
	st.Pulse, _ = pulse.Sign(other, pulse.Pulse{Agent: other.DID(), Seq: 1, At: t0, Mode: "sleep"})
	if err := f.states.Put(context.Background(), id, st, nil, nil); err != nil {
		t.Fatal(err)
	}
	d, err := f.src.One(context.Background(), id, t0)
	if err != nil {
		t.Fatal(err)
	}
	if d.StatusError == "" || d.Version != "" || d.Halted || d.Pulse == nil || d.Pulse.Verified || d.Pulse.Error == "" {
		t.Errorf("forged status and pulse believed: %+v, pulse %+v", d, d.Pulse)
	}
}

// TestDetail: the device page has the queue by sender, the held actions
// and the possibly lost hand-offs.
func TestDetail(t *testing.T) {
	f := newFixture(t)
	dev := didtest.Key(t, 1)
	f.put(t, device{key: dev, name: "d", mode: wake.Sleep, messages: 2,
		status: &wire.Status{Version: "1", HeldCount: 1, Held: []wire.StatusHeld{{Key: "did:key:zS k1", Purpose: "pay"}},
			LostCount: 1, Lost: []wire.StatusLost{{ObjectID: "o1", Issuer: "did:key:zS", Purpose: "comms:message", Seq: 7}},
			Wake: &wire.StatusWake{At: t0, Reason: "gpio"}, LastWake: &wire.StatusWake{At: t0.Add(-time.Hour), Reason: "rtc", AwakeMs: 5}}})
	r := queue.Record{Agent: dev.DID().String(), From: "did:key:zOther", Body: []byte("x")}
	if _, err := f.q.Enqueue(context.Background(), r, queuebounds.Default(), t0); err != nil {
		t.Fatal(err)
	}
	d, err := f.src.One(context.Background(), dev.DID().String(), t0)
	if err != nil {
		t.Fatal(err)
	}
	dt := d.Detail
	if len(dt.Senders) != 2 || dt.Senders[0].DID != "did:key:zSender" || dt.Senders[0].Messages != 2 || dt.Senders[1].Bytes != 1 {
		t.Errorf("senders %+v", dt.Senders)
	}
	if len(dt.Held) != 1 || dt.Held[0].Key != "did:key:zS k1" || len(dt.Wakes) != 2 || dt.Wakes[0].Reason != "gpio" || dt.Wakes[1].AwakeMs != 5 {
		t.Errorf("held %+v wakes %+v", dt.Held, dt.Wakes)
	}
	if len(dt.Lost) != 1 || dt.Lost[0].ObjectID != "o1" || dt.Lost[0].Seq != 7 {
		t.Errorf("lost %+v; want the status's one lost hand-off", dt.Lost)
	}
	if _, err := f.src.One(context.Background(), didtest.Key(t, 9).DID().String(), t0); err != agents.ErrUnknownAgent {
		t.Errorf("One(unknown) = %v, want agents.ErrUnknownAgent", err)
	}
}

// TestDescribeWindow: the window's start is said within the hour, also
// when the offset carries it past the hour or before it.
func TestDescribeWindow(t *testing.T) {
	for _, c := range []struct {
		w    wake.Window
		want string
	}{
		{wake.Window{Minute: 49, Offset: 30 * time.Minute}, "at :19:00 past every hour for 5m0s"},
		{wake.Window{Minute: 5, Offset: -10*time.Minute + 30*time.Second, Length: time.Minute}, "at :55:30 past every hour for 1m0s"},
	} {
		if got := describeWindow(c.w); got != c.want {
			t.Errorf("describeWindow(%+v) = %q, want %q", c.w, got, c.want)
		}
	}
}

// TestRetiredRowGoes: after a key rotation the retired DID's row leaves
// the fleet, so the successor (same name) is not flagged a duplicate, and
// a successor with no card yet shows its predecessor's name.
func TestRetiredRowGoes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	old, next, old2, next2 := didtest.Key(t, 1), didtest.Key(t, 2), didtest.Key(t, 3), didtest.Key(t, 4)
	for _, d := range []device{{key: old, name: "pump"}, {key: next, name: "pump", linked: true}, {key: old2, name: "well"}, {key: next2, linked: true}} {
		d.mode = wake.Sleep
		f.put(t, d)
	}
	retire := func(k, succ *did.PrivateKey, card bool) {
		st, err := f.states.Get(ctx, k.DID().String())
		if err != nil {
			t.Fatal(err)
		}
		st.Successor = succ.DID().String()
		if err := f.states.Put(ctx, k.DID().String(), st, nil, nil); err != nil {
			t.Fatal(err)
		}
		if !card {
			st, _ := f.states.Get(ctx, succ.DID().String())
			st.Card = nil
			f.states.Put(ctx, succ.DID().String(), st, nil, nil)
		}
	}
	retire(old, next, true)
	retire(old2, next2, false)
	fl, err := f.src.Build(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range fl.Devices {
		got[d.DID] = d.Name
		if d.DuplicateName {
			t.Errorf("%s (%s) flagged a duplicate name", d.Name, d.DID)
		}
	}
	if len(got) != 2 || got[next.DID().String()] != "pump" || got[next2.DID().String()] != "well" {
		t.Errorf("fleet %v, want only the successors, named pump and well", got)
	}
	if _, err := f.src.One(ctx, old.DID().String(), t0); !errors.Is(err, agents.ErrUnknownAgent) {
		t.Errorf("the retired device's page: %v, want unknown", err)
	}
}
