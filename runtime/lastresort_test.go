package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/wake"
)

// emptyPool fetches the agent's KeyPackages from the relay, as a caller
// who means harm does, until the relay answers with its last-resort
// KeyPackage, and returns that one (RFC 9420, Section 16.8). Without one
// the relay's answer is 503 and the test fails.
func (w *world) emptyPool() string {
	w.t.Helper()
	seen := map[string]bool{}
	for {
		status, wire, lastResort := w.takeKeyPackage()
		switch {
		case status != http.StatusOK:
			w.t.Fatalf("after %d KeyPackages the relay answered %d, want the last-resort KeyPackage", len(seen), status)
		case lastResort:
			if len(seen) != session.DefaultPoolSize {
				w.t.Errorf("the relay handed out %d one-use KeyPackages before the last-resort one, want %d", len(seen), session.DefaultPoolSize)
			}
			return wire
		case seen[wire]:
			w.t.Fatal("the relay handed out a one-use KeyPackage twice")
		}
		seen[wire] = true
	}
}

// TestLastResortKeyPackage: a caller empties the sleeping agent's
// KeyPackage pool at the relay; further fetches get the last-resort
// KeyPackage, the same each time, and two senders establish MLS sessions
// through it. At its next wake the agent joins both groups and decrypts
// their messages. The wake after replaces the used last-resort
// KeyPackage, and a Welcome a third sender made for the replaced one still
// joins once the relay holds the successor.
func TestLastResortKeyPackage(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.withMLS()
	w.run()
	if boot := w.nextWake(); boot.LinkErr != "" {
		t.Fatalf("boot wake: %+v", boot)
	}
	lr := w.emptyPool()
	for range 2 {
		if status, wire, last := w.takeKeyPackage(); status != http.StatusOK || !last || wire != lr {
			t.Fatalf("fetch from an empty pool = %d, lastResort %v, same %v; want 200 and the same last-resort KeyPackage", status, last, wire == lr)
		}
	}

	want := []string{sendQueued(t, w, runtimetest.Key(t, 1), nil), sendQueued(t, w, runtimetest.Key(t, 3), nil)}
	if status, wire, last := w.takeKeyPackage(); status != http.StatusOK || !last || wire != lr {
		t.Fatalf("after two sessions: fetch = %d, lastResort %v, same %v; want the same last-resort KeyPackage", status, last, wire == lr)
	}

	start, end := w.window.Next(w.clock.Now())
	if r := w.drainWindow(start, end, want); r.Drain.Handshake != 2 || r.Drain.Delivered != 2 {
		t.Errorf("drain %+v: want both Welcomes applied and both objects delivered", r.Drain)
	}

	// The pool is whole again. Emptied again, the relay still serves the
	// used last-resort KeyPackage until the next wake replaces it. A third
	// sender fetches it now and sends its Welcome only after that wake,
	// when the relay holds the successor.
	if again := w.emptyPool(); again != lr {
		t.Fatal("before the next wake the relay serves another last-resort KeyPackage, want the used one")
	}
	w.wakeThroughWindow()
	if next := w.emptyPool(); next == lr {
		t.Fatal("after a wake following its use the relay still serves the same last-resort KeyPackage, want its replacement")
	}
	late := runtimetest.Key(t, 4)
	answer, _ := json.Marshal(map[string]any{"did": w.key.DID().String(), "wire": lr, "lastResort": true})
	third := sendQueued(t, w, late, &http.Client{Transport: fetched{answer}})
	if r := w.wakeThroughWindow(); r.Drain.Handshake != 1 || r.Drain.Delivered != 1 {
		t.Errorf("drain %+v: want the Welcome to the replaced last-resort KeyPackage applied, its object delivered", r.Drain)
	}
	if got := w.rec.IDs(); len(got) != 3 || got[2] != third {
		t.Errorf("delivered %v, want the third sender's object last", got)
	}
	w.shutdown()
}

// sendQueued sends one MLS-encrypted object from k to the sleeping agent
// through the relay, over hc (nil for the default client), and returns its
// ID; the relay must answer 503 and queue it.
func sendQueued(t *testing.T, w *world, k *did.PrivateKey, hc *http.Client) string {
	t.Helper()
	peer := sender.RelayPeer(w.srv.URL, w.key.DID())
	c, err := sender.Open(filepath.Join(t.TempDir(), "sessions.db"), k, hc, w.clock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := runtimetest.Object(t, k, "comms:message", w.clock.Now(), 4*time.Hour, nil)
	d, err := c.Send(context.Background(), peer, json.RawMessage(o))
	if err != nil || d.Status != http.StatusServiceUnavailable || !d.Queued {
		t.Fatalf("send by %s: %+v, %v; want 503 queued", k.DID(), d, err)
	}
	return runtimetest.ObjectID(t, o)
}

// wakeThroughWindow moves the clock to the next window, waits for the
// agent to publish and drain, moves it to the window's end, and returns
// that wake's report.
func (w *world) wakeThroughWindow() runtime.WakeReport {
	w.t.Helper()
	start, end := w.window.Next(w.clock.Now())
	w.clock.Set(start)
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	w.clock.Set(end)
	return w.nextWake()
}

// fetched is a sender's HTTP transport that answers its KeyPackage fetch
// with an answer fetched earlier, and sends everything else to the relay.
type fetched struct{ answer []byte }

func (f fetched) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/mls/key-package") {
		return http.DefaultTransport.RoundTrip(req)
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(f.answer)), Request: req}, nil
}
