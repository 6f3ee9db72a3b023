package runtime_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/sleeptime"
	"github.com/torpor-dev/torpor/wake/waketest"
)

// t0 is outside the test agent's window.
var t0 = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

type world struct {
	t      *testing.T
	kernel *waketest.KernelClock
	dir    string
	cfg    runtime.Config
	clock  *clocktest.Clock
	srv    *httptest.Server
	relay  *relay.Relay
	queue  *queue.Bolt
	states *agents.Bolt
	key    *did.PrivateKey
	rec    *deliver.Recorder
	wakes  chan runtime.WakeReport
	phases chan runtime.Phase
	agent  *runtime.Agent
	window wake.Window
	stop   context.CancelFunc
	done   chan error
}

func newWorld(t *testing.T, mode wake.Mode) *world {
	return newWorldWith(t, mode, relay.Config{})
}

// newWorldWith is newWorld with the relay's configuration rc (its clock is
// the world's).
func newWorldWith(t *testing.T, mode wake.Mode, rc relay.Config) *world {
	w := &world{t: t, clock: clocktest.New(t0), key: runtimetest.Key(t, 8), rec: &deliver.Recorder{},
		wakes: make(chan runtime.WakeReport, 16), phases: make(chan runtime.Phase, 256)}
	dir := t.TempDir()
	w.dir, w.kernel = dir, waketest.NewKernelClock(time.Hour)
	rc.Clock = w.clock
	rl, err := worldtest.Open(dir, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rl.Close)
	w.srv, w.relay, w.queue, w.states = rl.Server, rl.Relay, rl.Queue, rl.States
	w.window = wake.SpreadWindowFor(w.key.DID().String())
	w.window.Length = 5 * time.Minute
	router := []deliver.Route{{Pattern: "*", Name: "rec", Handler: w.rec}}
	w.cfg = runtime.Config{
		PipelineConfig: runtime.PipelineConfig{Key: w.key, Purposes: purpose.Set{"comms:*"}, AllowPlaintext: true, Routes: router, Clock: w.clock},
		Hooks: runtime.Hooks{
			OnWake:  func(r runtime.WakeReport) { w.wakes <- r },
			OnPhase: func(p runtime.Phase) { w.phases <- p },
			Kernel:  w.kernel,
			Rand:    bytes.NewReader(make([]byte, 1<<16)),
		},
		Store: runtime.Store{DataDir: filepath.Join(dir, "agent")},
		Relay: runtime.Relay{URL: w.srv.URL},
		Schedule: runtime.Schedule{
			Mode:         mode,
			WindowLength: w.window.Length,
		},
	}
	w.newAgent()
	return w
}

// newAgent makes the agent from w.cfg (again, as after a restart).
func (w *world) newAgent() {
	w.t.Helper()
	a, err := runtime.New(w.cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	w.agent = a
}

func (w *world) run() {
	ctx, cancel := context.WithCancel(context.Background())
	w.stop, w.done = cancel, make(chan error, 1)
	go func() { w.done <- w.agent.Run(ctx) }()
}

func (w *world) shutdown() {
	w.t.Helper()
	w.stop()
	if err := <-w.done; err != nil {
		w.t.Fatalf("Run: %v", err)
	}
}

func (w *world) nextWake() runtime.WakeReport {
	w.t.Helper()
	select {
	case r := <-w.wakes:
		// Every phase of this wake was reported before it: forget them.
		for len(w.phases) > 0 {
			<-w.phases
		}
		return r
	case err := <-w.done:
		w.t.Fatalf("Run ended: %v", err)
	}
	return runtime.WakeReport{}
}

// waitPhases waits until a phase of each name completes (independent
// phases finish in any order).
func (w *world) waitPhases(names ...string) {
	w.t.Helper()
	left := map[string]bool{}
	for _, n := range names {
		left[n] = true
	}
	for len(left) > 0 {
		select {
		case p := <-w.phases:
			delete(left, p.Name)
		case err := <-w.done:
			w.t.Fatalf("Run ended: %v", err)
		}
	}
}

// runAlwaysOn runs w's agent through its boot wake and changes its mode
// to always_on, waiting until it published the new mode.
func (w *world) runAlwaysOn() {
	w.t.Helper()
	w.run()
	w.nextWake() // boot
	if err := w.agent.SetMode(wake.AlwaysOn, time.Time{}); err != nil {
		w.t.Fatal(err)
	}
	w.waitPhase(runtime.PhasePublish)
}

// alarmWake wakes the agent asleep on rtc (its alarm fires), waits until
// it published and drained, moves the clock to the end of the window that
// holds or follows from, and returns the report of the wake that then
// ends.
func (w *world) alarmWake(rtc *suspendSource, from time.Time) runtime.WakeReport {
	w.t.Helper()
	rtc.wakeup <- struct{}{}
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	_, end := w.window.Next(from)
	w.clock.Set(end)
	return w.nextWake()
}

// suspendSource is a fake RTC that suspends the device: Wait marks the
// clocks, says it is asleep, waits for the test to wake it, then moves
// CLOCK_BOOTTIME (not CLOCK_MONOTONIC: the monotonic clock stops in
// suspend) and the wall clock to the alarm, as a resume from an RTC alarm
// would find them.
type suspendSource struct {
	w      *world
	asleep chan struct{}
	wakeup chan struct{}
	// powerOff makes it a source whose sleep may not keep the process
	// (wake.KeepsProcess); it suspends to RAM otherwise.
	powerOff bool
}

func (s *suspendSource) KeepsProcess() bool { return !s.powerOff }

func (s *suspendSource) Wait(ctx context.Context, until time.Time) (wake.Wake, error) {
	m := sleeptime.Meter{Clock: s.w.clock, Kernel: s.w.kernel}
	mark := m.Mark()
	s.asleep <- struct{}{}
	select {
	case <-s.wakeup:
	case <-ctx.Done():
		return wake.Wake{}, ctx.Err()
	}
	s.w.kernel.Suspend(until.Sub(s.w.clock.Now()))
	s.w.clock.Set(until)
	return wake.Wake{Reason: wake.ReasonRTC, Source: "rtc0", At: until, Slept: m.Since(mark)}, nil
}

func (s *suspendSource) Halt() error { return nil }

// bootSuspending makes w's agent with a suspendSource as its only wake
// source, runs it, and returns the source and the boot wake's report.
func (w *world) bootSuspending() (*suspendSource, runtime.WakeReport) {
	w.t.Helper()
	rtc := &suspendSource{w: w, asleep: make(chan struct{}, 1), wakeup: make(chan struct{})}
	w.cfg.Schedule.Sources = []wake.Source{rtc}
	w.newAgent()
	w.run()
	return rtc, w.nextWake()
}

// waitPhase waits until a phase named name completes.
func (w *world) waitPhase(name string) runtime.Phase {
	w.t.Helper()
	for {
		select {
		case p := <-w.phases:
			if p.Name == name {
				return p
			}
		case err := <-w.done:
			w.t.Fatalf("Run ended: %v", err)
		}
	}
}

// send posts an object to the agent through the relay as sender, and
// returns the HTTP status and Retry-After.
func (w *world) send(sender *did.PrivateKey, obj []byte) (int, int) {
	w.t.Helper()
	return worldtest.Post(w.t, w.srv.URL, w.key.DID(), sender, w.clock.Now(), runtimetest.Body(w.t, runtimetest.DataPart(w.t, obj)))
}

// TestHourlyWakeDrainsAtTheWindow: a sender's objects get 503 with a
// Retry-After inside the next window while the agent sleeps; the agent
// wakes at the window, drains and delivers exactly the valid one.
func TestHourlyWakeDrainsAtTheWindow(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	rtc := &suspendSource{w: w, asleep: make(chan struct{}, 1), wakeup: make(chan struct{})}
	w.cfg.Schedule.Sources = []wake.Source{rtc}
	w.newAgent()
	before := goruntime.NumGoroutine() // with the relay serving
	w.run()
	boot := w.nextWake()
	if boot.Reason != "boot" || boot.LinkAttempts != 1 || boot.Phase(runtime.PhasePublish) == 0 && boot.LinkErr != "" {
		t.Fatalf("boot wake %+v", boot)
	}
	start, end := w.window.Next(t0)
	if !boot.NextWake.Equal(start) {
		t.Fatalf("boot wake announced next wake %v, want the window at %v", boot.NextWake, start)
	}

	alice := runtimetest.Key(t, 1)
	valid := runtimetest.Object(t, alice, "comms:message", t0, 2*time.Hour, nil)
	expiring := runtimetest.Object(t, alice, "comms:message", t0, time.Minute, nil)
	forged := runtimetest.Tamper(runtimetest.Object(t, alice, "comms:message", t0, 2*time.Hour, nil))
	for _, o := range [][]byte{valid, expiring, forged} {
		status, ra := w.send(alice, o)
		at := w.clock.Now().Add(time.Duration(ra) * time.Second)
		if status != http.StatusServiceUnavailable || at.Before(start) || !at.Before(end) {
			t.Fatalf("send while asleep: %d, Retry-After %d s (lands %v); want 503 landing in [%v, %v)", status, ra, at, start, end)
		}
	}

	<-rtc.asleep
	rtc.wakeup <- struct{}{} // the RTC alarm fires at the window's start
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	if got := w.rec.IDs(); len(got) != 1 || got[0] != runtimetest.ObjectID(t, valid) {
		t.Fatalf("delivered %v, want only %s", got, runtimetest.ObjectID(t, valid))
	}
	w.clock.Set(end)
	r := w.nextWake()
	if r.Reason != "rtc" || r.Drain.Acked != 3 || r.Drain.Rejected["expired"] != 1 || r.Drain.Rejected["signature-invalid"] != 1 {
		t.Fatalf("window wake: reason %s, drain %v", r.Reason, r.Drain)
	}
	if r.Slept.Suspended() != start.Sub(t0) {
		t.Errorf("time suspended %v (CLOCK_BOOTTIME beyond CLOCK_MONOTONIC), want %v", r.Slept.Suspended(), start.Sub(t0))
	}
	checkWindowPhases(t, r, end.Sub(start))
	if st, _ := w.queue.Stats(context.Background(), w.key.DID().String(), w.clock.Now()); st.Messages != 0 {
		t.Errorf("relay still holds %d records", st.Messages)
	}
	checkRelayPulse(t, w, end)
	w.shutdown()
	checkGoroutines(t, before)
}

// checkWindowPhases checks that a window's wake measured every phase, and
// that the live phase lasted until the window's end, length into it.
func checkWindowPhases(t *testing.T, r runtime.WakeReport, length time.Duration) {
	t.Helper()
	for _, name := range []string{runtime.PhaseLink, runtime.PhasePulse, runtime.PhaseCard, runtime.PhasePublish, runtime.PhaseDrain, runtime.PhaseLive, runtime.PhaseAnnounce} {
		found := false
		for _, p := range r.Phases {
			found = found || p.Name == name
		}
		if !found {
			t.Errorf("phase %s not measured in %+v", name, r.Phases)
		}
	}
	for _, p := range r.Phases {
		if p.Name == runtime.PhaseLive && p.Start+p.Duration != length {
			t.Errorf("live phase ends %v into the wake, want at the window's end %v (the clock decides, no fixed sleeps)", p.Start+p.Duration, length)
		}
	}
}

// checkRelayPulse checks the pulse the relay shows next to the card: the
// second of the chain, announcing the window after the one ending at end.
func checkRelayPulse(t *testing.T, w *world, end time.Time) {
	t.Helper()
	resp, err := http.Get(w.srv.URL + "/a/" + w.key.DID().String() + "/pulse")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p, err := pulse.Parse(doc)
	next, _ := w.window.Next(end)
	if err != nil || p.Seq != 2 || p.Agent != w.key.DID() || !p.NextWake.Equal(next) || p.Prev == "" {
		t.Errorf("pulse at the relay: %+v, %v; want seq 2 by the agent announcing %v", p, err, next)
	}
}

// checkGoroutines fails when goroutines started by the test outlive it
// (the agent's leak check). Goroutine exit is asynchronous, so it
// yields until the count settles.
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	http.DefaultClient.CloseIdleConnections() // the sender's
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := goruntime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:goruntime.Stack(buf, true)]
			t.Fatalf("%d goroutines after the agent stopped, %d before:\n%s", n, before, buf)
		}
		goruntime.Gosched()
	}
}

// stepWhileBlocked advances the fake clock one second at a time while
// blocked reports that the agent waits on it (in a backoff delay), until
// done reports true or a wake ends. No real time is waited for: the clock
// moves only while the agent is blocked on it.
func (w *world) stepWhileBlocked(blocked, done func() bool) (runtime.WakeReport, bool) {
	w.t.Helper()
	for !done() {
		created := w.clock.TimerCreated()
		if blocked() {
			w.clock.Advance(time.Second)
			continue
		}
		select {
		case r := <-w.wakes:
			return r, true
		case <-created:
		case err := <-w.done:
			w.t.Fatalf("Run ended: %v", err)
		}
	}
	return runtime.WakeReport{}, false
}

// TestUnreachableRelayBacksOffInsideTheWindow: a relay that cannot be
// reached is retried with backoff until the window ends; then the agent
// sleeps as planned. When it comes back within a window, the agent links
// and drains.
func TestUnreachableRelayBacksOffInsideTheWindow(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	var mu sync.Mutex
	down, attempts, backingOff := true, 0, false
	w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
		mu.Lock()
		attempts++
		d := down
		backingOff = d // a refused dial is followed by a backoff delay on the clock
		mu.Unlock()
		if d {
			return nil, errors.New("connection refused")
		}
		return link.Dial(ctx, c)
	}
	blocked := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return backingOff && w.clock.Pending() >= 2 // the window's deadline and the backoff delay
	}
	w.newAgent()
	w.run()
	bootEnd := t0.Add(w.window.Length)
	r, ok := w.stepWhileBlocked(blocked, func() bool { return false })
	if !ok || r.LinkErr == "" || r.LinkAttempts < 4 || r.Awake != w.window.Length {
		t.Fatalf("boot wake with the relay down: attempts %d, error %q, awake %v; want several attempts over the %v window",
			r.LinkAttempts, r.LinkErr, r.Awake, w.window.Length)
	}
	start, end := w.window.Next(bootEnd)
	if !r.NextWake.Equal(start) {
		t.Errorf("next wake %v, want %v: the agent sleeps as planned", r.NextWake, start)
	}

	// The next window: two attempts fail, then the relay is up again.
	mu.Lock()
	attempts = 0
	mu.Unlock()
	w.clock.Set(start)
	w.stepWhileBlocked(blocked, func() bool {
		mu.Lock()
		defer mu.Unlock()
		if attempts >= 2 {
			down = false
		}
		return attempts >= 3 // the third dial, to a relay that is up
	})
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	w.clock.Set(end)
	r = w.nextWake()
	if r.LinkErr != "" || r.LinkAttempts != 3 {
		t.Fatalf("window wake after the relay came back: attempts %d, error %q; want 3 and none (phases %+v, at %v, end %v)", r.LinkAttempts, r.LinkErr, r.Phases, r.At, r.End)
	}
	w.shutdown()
}

// TestModeChangeAndLiveRequests: a mode changed at runtime wakes a
// sleeping agent at once; in always_on the relay forwards requests live;
// the change survives a restart.
func TestModeChangeAndLiveRequests(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.runAlwaysOn()
	alice := runtimetest.Key(t, 1)
	obj := runtimetest.Object(t, alice, "comms:message", t0, time.Hour, nil)
	status, body := w.sendLive(alice, obj)
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"result"`)) {
		t.Fatalf("live request: %d %s; want 200 with a JSON-RPC result", status, body)
	}
	if got := w.rec.IDs(); len(got) != 1 || got[0] != runtimetest.ObjectID(t, obj) {
		t.Fatalf("delivered %v", got)
	}
	// Each live answer is a message of its own, with its own id.
	_, second := w.sendLive(alice, runtimetest.Object(t, alice, "comms:message", t0, time.Hour, nil))
	if a, b := resultMessageID(t, body), resultMessageID(t, second); a == b {
		t.Errorf("two live answers share the messageId %q", a)
	}
	// A replay is refused live, coarsely.
	status, body = w.sendLive(alice, obj)
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"object rejected"`)) || bytes.Contains(body, []byte("replay")) {
		t.Fatalf("live replay: %d %s; want a coarse JSON-RPC error", status, body)
	}
	if err := w.agent.SetMode(wake.Sleep, time.Time{}); err != nil {
		t.Fatal(err)
	}
	r := w.nextWake()
	if r.Mode != string(wake.AlwaysOn) || r.Live != 3 || r.Drain.Accepted != 2 || r.Drain.Rejected["replay"] != 1 {
		t.Fatalf("always_on wake ended: mode %s, %d live requests, drain %v", r.Mode, r.Live, r.Drain)
	}
	w.shutdown()
	w.newAgent()
	w.run()
	boot := w.nextWake()
	if m, _ := w.agent.Mode(); m != wake.Sleep || boot.Mode != string(wake.Sleep) {
		t.Fatalf("after a restart: mode %s (boot wake %s), want the runtime change to sleep kept", m, boot.Mode)
	}
	w.shutdown()
}

// TestLiveInvalidRequest: a body the agent does not read as a JSON-RPC
// request (a member twice, an id out of range, not JSON) is answered live
// with a2a.ParseRequest's error and id null, as its relay answers it when
// the agent sleeps; the relay here stores and forwards such bodies
// (StoreOpaque) so that they reach the agent. Before, the agent answered
// "Method not found" and echoed the id raw.
func TestLiveInvalidRequest(t *testing.T) {
	w := newWorldWith(t, wake.HourlyWake, relay.Config{Access: relay.Access{StoreOpaque: true}})
	w.runAlwaysOn()
	alice := runtimetest.Key(t, 1)
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1e400,"method":"SendMessage","params":{}}`:                  `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: number outside the IEEE 754 double range"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tasks/get","method":"SendMessage","params":{}}`: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: duplicate member \"method\""}}`,
		`one`: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
	} {
		if status, got := w.sendRaw(alice, []byte(body)); status != http.StatusOK || string(got) != want {
			t.Errorf("%s: %d %s, want 200 %s", body, status, got, want)
		}
	}
	w.shutdown()
}

func (w *world) sendLive(sender *did.PrivateKey, obj []byte) (int, []byte) {
	w.t.Helper()
	return w.sendRaw(sender, runtimetest.Body(w.t, runtimetest.DataPart(w.t, obj)))
}

func (w *world) sendRaw(sender *did.PrivateKey, body []byte) (int, []byte) {
	w.t.Helper()
	req, _ := http.NewRequest("POST", w.srv.URL+"/a/"+w.key.DID().String()+"/a2a/jsonrpc", bytes.NewReader(body))
	tok, _ := bearer.Issue(sender, "http://"+w.srv.Listener.Addr().String(), w.clock.Now(), 0)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set(a2a.VersionHeader, "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// resultMessageID is the messageId of the message in a JSON-RPC result.
func resultMessageID(t *testing.T, body []byte) string {
	t.Helper()
	var r struct {
		Result struct {
			Message struct {
				MessageID string `json:"messageId"`
			} `json:"message"`
			MessageID string `json:"messageId"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("live answer %s: %v", body, err)
	}
	id := cmp.Or(r.Result.Message.MessageID, r.Result.MessageID)
	if id == "" {
		t.Fatalf("live answer %s has no messageId", body)
	}
	return id
}
