package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/runtime/trusted"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// commits returns the id of the last transaction committed to db: a read
// transaction's ID is that of the last write that committed, so the
// difference of two counts the commits between them (rolled-back writes
// do not count).
func commits(t *testing.T, db *bolt.DB) int {
	t.Helper()
	var id int
	if err := db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// lastWakeIn returns the last wake's report db holds.
func lastWakeIn(t *testing.T, db *bolt.DB) (r runtime.WakeReport, ok bool) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		var err error
		r, ok, err = runtime.LastWake(tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, ok
}

// rtcWindowWake wakes the sleeping agent at its window, runs the window to
// its end and returns the wake's report once the agent sleeps again.
func (w *world) rtcWindowWake(rtc *suspendSource) runtime.WakeReport {
	w.t.Helper()
	r := w.alarmWake(rtc, w.clock.Now())
	<-rtc.asleep
	return r
}

// TestAnEmptyWakeCommitsOnce: an empty wake commits one bbolt transaction,
// its pulse's, which also records the wake before it; the wake's own
// record waits for the next wake's pulse, and the agent records it when
// it stops.
func TestAnEmptyWakeCommitsOnce(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	rtc, boot := w.bootSuspending()
	<-rtc.asleep
	db, _, _ := w.agent.Pipeline().Stores()
	if _, ok := lastWakeIn(t, db); ok {
		t.Error("the boot wake's record was committed before the agent slept (it waits for the next pulse)")
	}
	for i := range 2 {
		n := commits(t, db)
		r := w.rtcWindowWake(rtc)
		if got := commits(t, db) - n; got != 1 {
			t.Errorf("empty wake %d committed %d bbolt transactions, want 1", i+1, got)
		}
		if last, ok := lastWakeIn(t, db); !ok || !last.At.Equal(boot.At) {
			t.Errorf("after wake %d bbolt holds the last wake %v (%v), want the one before at %v", i+1, last.At, ok, boot.At)
		}
		if st := w.status(); st.Wake == nil || !st.Wake.At.Equal(r.At) {
			t.Errorf("after wake %d the relay's status names wake %+v, want that wake at %v", i+1, st.Wake, r.At)
		}
		boot = r
	}
	rep, err := w.agent.Pipeline().Report(0)
	if err != nil || rep.LastWake == nil || !rep.LastWake.At.Equal(boot.At) {
		t.Errorf("the operator's report names the last wake %+v (%v), want the one at %v", rep.LastWake, err, boot.At)
	}
	w.shutdown()
	db, err = bolt.Open(filepath.Join(w.cfg.Store.DataDir, runtime.DBFile), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if last, ok := lastWakeIn(t, db); !ok || !last.At.Equal(boot.At) || last.Reason != "rtc" {
		t.Errorf("after the stop bbolt holds the last wake %+v (%v), want the window wake at %v", last, ok, boot.At)
	}
}

// TestAPowerOffRecordsTheWakeBeforeItSleeps: a wake source whose sleep
// may not keep the process (a power-off) gets the wake's record committed
// before it sleeps.
func TestAPowerOffRecordsTheWakeBeforeItSleeps(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	rtc := &suspendSource{w: w, asleep: make(chan struct{}, 1), wakeup: make(chan struct{}), powerOff: true}
	w.cfg.Schedule.Sources = []wake.Source{rtc}
	w.newAgent()
	w.run()
	boot := w.nextWake()
	<-rtc.asleep
	db, _, _ := w.agent.Pipeline().Stores()
	if last, ok := lastWakeIn(t, db); !ok || !last.At.Equal(boot.At) {
		t.Errorf("asleep before a power-off, bbolt holds the last wake %v (%v), want the boot wake at %v", last.At, ok, boot.At)
	}
	n := commits(t, db)
	r := w.rtcWindowWake(rtc)
	if got := commits(t, db) - n; got != 2 {
		t.Errorf("an empty wake before a power-off committed %d bbolt transactions, want 2 (the pulse, the record)", got)
	}
	if last, ok := lastWakeIn(t, db); !ok || !last.At.Equal(r.At) {
		t.Errorf("asleep before a power-off, bbolt holds the last wake %v (%v), want the window wake at %v", last.At, ok, r.At)
	}
	w.shutdown()
}

// TestALostWakeRecordIsLogged: the power fails while the agent sleeps,
// its last wake's record still in memory. At the next boot the agent
// says that record was lost, and takes the wake it had planned from the
// pulse (signed and committed before it was published): it does not claim
// a missed wake.
func TestALostWakeRecordIsLogged(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	rtc, _ := w.bootSuspending()
	<-rtc.asleep
	r := w.rtcWindowWake(rtc)
	// The file as the flash holds it, asleep: what a power cut leaves.
	path := filepath.Join(w.cfg.Store.DataDir, runtime.DBFile)
	cut, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w.shutdown()
	if err := os.WriteFile(path, cut, 0o600); err != nil {
		t.Fatal(err)
	}
	log := &runtimetest.Log{}
	now := r.NextWake.Add(-time.Minute) // before the wake it planned
	restartAt(t, w, now, log, false)
	s := log.String()
	if !strings.Contains(s, "the last wake's report was not recorded") ||
		!strings.Contains(s, "pulseAt="+r.At.UTC().Format(time.RFC3339)) {
		t.Errorf("the restart after the power cut does not say the window wake's record was lost:\n%s", s)
	}
	checkMissedWakeLog(t, s, r.NextWake, now, false)
	w.shutdown()
}

// goroutine returns the id of the goroutine it runs on, from the first
// line of its stack ("goroutine 7 [running]:").
func goroutine() string {
	buf := make([]byte, 64)
	buf = buf[:goruntime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// TestAWakesStoreWorkRunsOnTheWakesGoroutine: the pulse, the outbox's
// settling, the card and the publish run one after the other on the
// wake's own goroutine; only the dial and the drain, which wait on the
// network beside that work, get goroutines of their own.
func TestAWakesStoreWorkRunsOnTheWakesGoroutine(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	var mu sync.Mutex
	ran := map[string]string{} // phase: goroutine
	w.cfg.Hooks.OnPhase = func(p runtime.Phase) {
		mu.Lock()
		ran[p.Name] = goroutine()
		mu.Unlock()
	}
	w.newAgent()
	w.run()
	w.nextWake()
	w.shutdown()
	mu.Lock()
	defer mu.Unlock()
	wakeG := ran[runtime.PhasePulse]
	for _, name := range []string{runtime.PhaseRecover, runtime.PhaseCard, runtime.PhasePublish, runtime.PhaseAnnounce, runtime.PhaseClose} {
		if g, ok := ran[name]; !ok || g != wakeG {
			t.Errorf("phase %s ran on goroutine %q (%v), want the pulse's, the wake's: %q", name, g, ok, wakeG)
		}
	}
	for _, name := range []string{runtime.PhaseLink, runtime.PhaseDrain} {
		if g, ok := ran[name]; !ok || g == wakeG {
			t.Errorf("phase %s ran on goroutine %q (%v), want one of its own beside the wake's %q", name, g, ok, wakeG)
		}
	}
}

// TestAnEmptyWakeWithTrustedTimeCommitsOnce: an agent that keeps trusted
// time commits the floor its link's handshake proved in the pulse's
// transaction, not in one of its own: still one commit per empty wake,
// and the next wake finds that floor kept.
func TestAnEmptyWakeWithTrustedTimeCommitsOnce(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	// NTP vouches for the system clock, so the relay's time and the
	// clock agree and the floor follows them.
	w.cfg.TrustedTime = &trusted.Config{Kernel: &ntpKernel{synced: true}}
	rtc, _ := w.bootSuspending()
	<-rtc.asleep
	db, _, _ := w.agent.Pipeline().Stores()
	var rs []runtime.WakeReport
	for i := range 2 {
		n := commits(t, db)
		r := w.rtcWindowWake(rtc)
		if got := commits(t, db) - n; got != 1 {
			t.Errorf("empty wake %d with trusted time committed %d bbolt transactions, want 1", i+1, got)
		}
		if r.Time == nil || r.Time.Source == "" {
			t.Fatalf("wake %d established its time as %+v", i+1, r.Time)
		}
		rs = append(rs, r)
	}
	if f := rs[1].Time.Floor; f.Before(rs[0].At.Add(-time.Minute)) {
		t.Errorf("the second wake found the floor at %v, want the one the first wake (at %v) committed", f, rs[0].At)
	}
	w.shutdown()
}

// TestAWakeWhoseRelayIsDownPulsesAtOnce: the pulse waits for the first
// dial (to carry the floor of a link that came up), not for a relay that
// cannot be reached: when the first dial fails, the pulse is made and
// committed at once, while the dial backs off.
func TestAWakeWhoseRelayIsDownPulsesAtOnce(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
		return nil, errors.New("connection refused")
	}
	w.newAgent()
	w.run()
	p := w.waitPhase(runtime.PhasePulse)
	if p.Err != "" || p.Start != 0 || !w.clock.Now().Equal(t0) {
		t.Errorf("pulse %+v at %v, want it made at the wake's start %v with the relay down", p, w.clock.Now(), t0)
	}
	w.shutdown()
}

// TestTheAgentAsksForFewerPings: the agent's link asks its relay to ping
// it every LinkPingInterval (wire.MaxPingInterval), not every
// wire.PingInterval: in an idle window each ping wakes the agent.
func TestTheAgentAsksForFewerPings(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	var mu sync.Mutex
	var asked []time.Duration
	w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
		mu.Lock()
		asked = append(asked, c.PingInterval)
		mu.Unlock()
		return link.Dial(ctx, c)
	}
	w.newAgent()
	w.run()
	w.nextWake()
	w.shutdown()
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 {
		t.Fatal("the wake dialled no link")
	}
	for i, d := range asked {
		if d != wire.MaxPingInterval || runtime.LinkPingInterval != wire.MaxPingInterval {
			t.Errorf("dial %d asked for a ping every %v, want %v", i+1, d, wire.MaxPingInterval)
		}
	}
}

// TestASleepAfterADrainFreesTheHeap: before a sleep that keeps the
// process (a suspend to RAM), the agent whose wake drained records returns
// its free heap to the kernel once (Hooks.FreeOSMemory); after an empty
// wake, or before a power-off, which ends the process, it does not spend
// the collection.
func TestASleepAfterADrainFreesTheHeap(t *testing.T) {
	tests := []struct {
		name     string
		powerOff bool
		want     int64 // calls before the sleep after the wake that drained
	}{
		{"suspend to RAM", false, 1},
		{"power-off", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, wake.HourlyWake)
			rtc := &suspendSource{w: w, asleep: make(chan struct{}, 1), wakeup: make(chan struct{}), powerOff: tt.powerOff}
			w.cfg.Schedule.Sources = []wake.Source{rtc}
			var freed atomic.Int64
			w.cfg.Hooks.FreeOSMemory = func() { freed.Add(1) }
			w.newAgent()
			w.run()
			w.nextWake()
			<-rtc.asleep
			if got := freed.Load(); got != 0 {
				t.Errorf("asleep after the boot wake, which drained nothing: FreeOSMemory called %d times, want 0", got)
			}
			alice := runtimetest.Key(t, 1)
			if status, _ := w.send(alice, runtimetest.Object(t, alice, "comms:message", t0, 2*time.Hour, nil)); status != http.StatusServiceUnavailable {
				t.Fatalf("send while asleep: %d, want 503 (queued)", status)
			}
			if r := w.rtcWindowWake(rtc); r.Drain.Acked != 1 { // returns asleep again
				t.Fatalf("the window's wake drained %v, want the one record", r.Drain)
			}
			if got := freed.Load(); got != tt.want {
				t.Errorf("asleep after the wake that drained a record: FreeOSMemory called %d times, want %d", got, tt.want)
			}
			w.rtcWindowWake(rtc)
			if got := freed.Load(); got != tt.want {
				t.Errorf("asleep after an empty wake: FreeOSMemory called %d times in all, want still %d", got, tt.want)
			}
			w.shutdown()
		})
	}
}

// TestADrainLowersTheCollectorsTarget: a wake that drains records sets
// the garbage collector's target to drainGCPercent for its drain and back
// after (Hooks.SetGCPercent); a wake that drains nothing, the boot wake
// and an empty one, leaves it alone; a target already lower stays.
func TestADrainLowersTheCollectorsTarget(t *testing.T) {
	for _, start := range []int{100, 25, -1} {
		t.Run(fmt.Sprintf("GOGC=%d", start), func(t *testing.T) {
			w := newWorld(t, wake.HourlyWake)
			rtc := &suspendSource{w: w, asleep: make(chan struct{}, 1), wakeup: make(chan struct{})}
			w.cfg.Schedule.Sources = []wake.Source{rtc}
			var mu sync.Mutex
			target, calls := start, []int(nil)
			w.cfg.Hooks.SetGCPercent = func(p int) int {
				mu.Lock()
				defer mu.Unlock()
				old := target
				target, calls = p, append(calls, p)
				return old
			}
			state := func() (int, []int) { mu.Lock(); defer mu.Unlock(); return target, slices.Clone(calls) }
			w.newAgent()
			w.run()
			w.nextWake()
			<-rtc.asleep
			if _, c := state(); len(c) != 0 {
				t.Errorf("the boot wake, which drained nothing, set the target: %v", c)
			}
			alice := runtimetest.Key(t, 1)
			if status, _ := w.send(alice, runtimetest.Object(t, alice, "comms:message", t0, 2*time.Hour, nil)); status != http.StatusServiceUnavailable {
				t.Fatalf("send while asleep: %d, want 503 (queued)", status)
			}
			if r := w.rtcWindowWake(rtc); r.Drain.Acked != 1 {
				t.Fatalf("the window's wake drained %v, want the one record", r.Drain)
			}
			want := []int{runtime.DrainGCPercent, start}
			if got, c := state(); got != start || !slices.Equal(c, want) {
				t.Errorf("after the wake that drained a record: target %d, set %v; want %d, set %v", got, c, start, want)
			}
			w.rtcWindowWake(rtc)
			if _, c := state(); !slices.Equal(c, want) {
				t.Errorf("an empty wake set the target: %v, want still %v", c, want)
			}
			w.shutdown()
		})
	}
}

// TestAnEmptyWakeLogsTwoLines: an empty wake whose time the relay and the
// system clock agree on logs two lines at the default level, "waking" and
// "wake" (which names the trusted time's source); the "time established"
// line says nothing more then, and is logged at debug level.
func TestAnEmptyWakeLogsTwoLines(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.cfg.TrustedTime = &trusted.Config{Kernel: &ntpKernel{synced: true}}
	var log runtimetest.Log
	w.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	rtc, _ := w.bootSuspending()
	<-rtc.asleep
	before := log.String()
	r := w.rtcWindowWake(rtc)
	lines := strings.Split(strings.TrimSpace(strings.TrimPrefix(log.String(), before)), "\n")
	w.shutdown()
	if r.Time == nil || r.Time.Source == "" || r.Drain.Records != 0 {
		t.Fatalf("the wake: time %+v, drain %+v; want an empty wake with a trusted time", r.Time, r.Drain)
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "msg=waking ") || !strings.Contains(lines[1], "msg=wake ") ||
		!strings.Contains(lines[1], "trustedTime="+r.Time.Source) {
		t.Errorf("an empty wake logged %d lines:\n%s\nwant waking, then wake with trustedTime=%s", len(lines), strings.Join(lines, "\n"), r.Time.Source)
	}
}
