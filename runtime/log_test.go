package runtime_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// TestLogLinesHaveOneValuePerKey runs an agent and its relay through a
// boot and a window with queued records (one valid, one forged, one
// consequential action), a live request and a replay, all logging to one
// slog text log, and parses every line: no line may repeat a key, and the
// rejection and the held action are logged when the drain handles them,
// before the window ends.
func TestLogLinesHaveOneValuePerKey(t *testing.T) {
	var log runtimetest.Log
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := newWorldWith(t, wake.HourlyWake, relay.Config{Logger: logger})
	w.cfg.Logger = logger
	w.cfg.Purposes, w.cfg.Consequential = purpose.Set{"comms:*", "action:*"}, purpose.Set{"action:*"}
	w.cfg.Owner = runtimetest.Key(t, 9).DID()
	rtc, _ := w.bootSuspending()
	_, end := w.window.Next(t0)
	alice := runtimetest.Key(t, 1)
	valid := runtimetest.Object(t, alice, "comms:message", t0, 2*time.Hour, nil)
	for _, o := range [][]byte{
		valid,
		runtimetest.Tamper(runtimetest.Object(t, alice, "comms:message", t0, 2*time.Hour, nil)),
		runtimetest.Object(t, alice, "action:open-valve", t0, 2*time.Hour, map[string]any{"idempotencyKey": "valve-7"}),
	} {
		w.send(alice, o)
	}
	<-rtc.asleep
	rtc.wakeup <- struct{}{}
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	for _, msg := range []string{`msg="record rejected or deferred"`, `msg="action held"`} {
		if !strings.Contains(log.String(), msg) {
			t.Errorf("no %s line while the window is open: it must be logged when the drain handles the record\n%s", msg, log.String())
		}
	}
	w.sendLive(alice, runtimetest.Object(t, alice, "comms:message", t0, 2*time.Hour, nil))
	w.sendLive(alice, valid) // a replay, refused live
	if !strings.Contains(log.String(), `msg="live request rejected" component=agent seq=0 cause=replay`) {
		t.Errorf("no line for the live replay's rejection:\n%s", log.String())
	}
	w.clock.Set(end)
	w.nextWake()
	w.shutdown()
	checkOneValuePerKey(t, log.String())
}

// checkOneValuePerKey parses each slog text line of log and reports every
// key that a line repeats.
func checkOneValuePerKey(t *testing.T, log string) {
	t.Helper()
	n := 0
	for _, s := range strings.Split(strings.TrimSpace(log), "\n") {
		l, err := procs.ParseLine(s)
		if err != nil {
			t.Errorf("not a slog text line: %s", s)
			continue
		}
		n++
		seen := map[string]bool{}
		for _, a := range l.Attrs {
			if seen[a.Key] {
				t.Errorf("key %q repeated: %s", a.Key, s)
			}
			seen[a.Key] = true
		}
	}
	if n < 10 {
		t.Fatalf("only %d log lines:\n%s", n, log)
	}
}

// TestUnreachableRelayIsLoggedAtOnceThenAtABoundedRate: inside a window,
// the first failed dial is logged at once (WARN, with the relay's URL and
// the error), and later ones at most once a minute on the agent's clock,
// not on every attempt and not only when the window ends.
func TestUnreachableRelayIsLoggedAtOnceThenAtABoundedRate(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	var log runtimetest.Log
	w.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	var mu sync.Mutex
	attempts, first := 0, ""
	w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts == 2 { // the first failure's line was written before this retry
			first = log.String()
		}
		return nil, errors.New("dial tcp 127.0.0.1:28417: connection refused")
	}
	blocked := func() bool { return w.clock.Pending() >= 2 } // the window's deadline and the backoff delay
	w.newAgent()
	w.run()
	r, ok := w.stepWhileBlocked(blocked, func() bool { return false })
	w.shutdown()
	if !ok || r.LinkErr == "" {
		t.Fatalf("boot wake with the relay down: %+v", r)
	}
	want := `level=WARN msg="relay unreachable" component=agent relay=` + w.srv.URL + ` attempt=1 err="dial tcp 127.0.0.1:28417: connection refused"`
	if !strings.Contains(first, want) {
		t.Errorf("after the first failed dial the log has no line\n%s\nit has:\n%s", want, first)
	}
	n := strings.Count(log.String(), `msg="relay unreachable"`)
	if limit := int(w.window.Length/time.Minute) + 1; n < 2 || n > limit || n >= r.LinkAttempts {
		t.Errorf(`%d "relay unreachable" lines for %d attempts in a %v window; want 2 to %d`, n, r.LinkAttempts, w.window.Length, limit)
	}
}
