package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/runtime/sessions"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/wake"
)

// withMLS gives w's agent real MLS sessions and its KeyPackage pool on its
// bbolt file, and accepts only encrypted objects.
func (w *world) withMLS() {
	w.cfg.AllowPlaintext = false
	w.cfg.MLS.OpenMLS = func(db *bolt.DB) (drain.Sessions, runtime.KeyPackages, error) {
		s, err := session.New(session.Config{Key: w.key, Clock: w.clock})
		if err != nil {
			return nil, nil, err
		}
		return sessions.Sessions{S: s}, sessions.KeyPackages{S: s, DB: db}, nil
	}
	w.newAgent()
}

// TestEndToEndMLS: a sender sends ten MLS-encrypted objects through a real
// relay while the agent sleeps, and gets 503 with a Retry-After inside the
// next window for each; the agent wakes at the window, joins the session
// from the queued Welcome, drains, and the handler receives exactly the
// valid objects; the forged, expired-at-dequeue, replayed, wrong-sender and
// not-permitted ones are drained and reported by cause, not delivered.
func TestEndToEndMLS(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.withMLS()
	w.run()
	boot := w.nextWake()
	if boot.LinkErr != "" || boot.Phase(runtime.PhaseKeyPackages) == 0 && boot.Phases == nil {
		t.Fatalf("boot wake: %+v", boot)
	}
	start, end := w.window.Next(w.clock.Now())

	alice, carol := runtimetest.Key(t, 1), runtimetest.Key(t, 3)
	client, err := sender.Open(filepath.Join(t.TempDir(), "alice", "sessions.db"), alice, nil, w.clock)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	peer := sender.RelayPeer(w.srv.URL, w.key.DID())
	valid, objs := mixedObjects(t, alice, carol, w.clock.Now())
	sendAllQueued(t, w, client, peer, objs, start, end)

	r := w.drainWindow(start, end, valid)
	want := map[string]int{"signature-invalid": 1, "expired": 1, "replay": 1, "sender-mismatch": 1, "purpose-not-permitted": 1}
	if diff := cmp.Diff(want, r.Drain.Rejected); diff != "" {
		t.Errorf("rejections by cause (-want +got):\n%s", diff)
	}
	if r.Drain.Handshake != 1 || r.Drain.Acked != 11 || r.Drain.Deferred != 0 || r.Drain.Delivered != 5 {
		t.Errorf("drain %v: want the Welcome applied, 11 records acked, 5 delivered", r.Drain)
	}
	w.shutdown()
}

// mixedObjects makes, at now, five valid objects from alice and five that
// the agent must drain and reject, one for each cause; it returns the
// valid objects' IDs and all ten objects, valid ones first.
func mixedObjects(t *testing.T, alice, carol *did.PrivateKey, now time.Time) ([]string, [][]byte) {
	t.Helper()
	obj := func(k *did.PrivateKey, p string, ttl time.Duration) []byte {
		return runtimetest.Object(t, k, p, now, ttl, nil)
	}
	var valid []string
	var objs [][]byte
	for range 5 {
		o := obj(alice, "comms:message", 2*time.Hour)
		valid = append(valid, runtimetest.ObjectID(t, o))
		objs = append(objs, o)
	}
	objs = append(objs,
		runtimetest.Tamper(obj(alice, "comms:message", 2*time.Hour)), // forged
		obj(alice, "comms:message", time.Minute),                     // expired by the time the window opens
		objs[0],                                                      // replayed
		obj(carol, "comms:message", 2*time.Hour),                     // wrong sender: Carol's object in Alice's session
		obj(alice, "coordination:proposal", 2*time.Hour),             // not permitted
	)
	return valid, objs
}

// sendAllQueued sends each of objs to peer with client while the agent
// sleeps; each must get 503, be queued, and carry a Retry-After landing
// in the window [start, end).
func sendAllQueued(t *testing.T, w *world, client *sender.Client, peer sender.Peer, objs [][]byte, start, end time.Time) {
	t.Helper()
	for i, o := range objs {
		d, err := client.Send(context.Background(), peer, json.RawMessage(o))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		at := w.clock.Now().Add(d.RetryAfter)
		if d.Status != http.StatusServiceUnavailable || !d.Queued || at.Before(start) || !at.Before(end) {
			t.Fatalf("send %d: status %d queued %v, Retry-After %v lands %v; want 503 queued landing in [%v, %v)",
				i, d.Status, d.Queued, d.RetryAfter, at, start, end)
		}
	}
}

// TestHandedOutKeyPackagesAreReplaced: while the agent sleeps, a caller
// empties its KeyPackage pool at the relay without ever sending a Welcome
// (a failed initiator, or one who means harm). At its next wake the
// relay's answer to the published state shows them handed out, and the
// agent publishes as many new ones at once, so initiators can again start
// sessions while it sleeps.
func TestHandedOutKeyPackagesAreReplaced(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.withMLS()
	w.run()
	if boot := w.nextWake(); boot.LinkErr != "" {
		t.Fatalf("boot wake: %+v", boot)
	}
	take := func() (int, string) {
		t.Helper()
		status, wire, lastResort := w.takeKeyPackage()
		if lastResort {
			return http.StatusServiceUnavailable, "" // the pool is empty
		}
		return status, wire
	}
	first := map[string]bool{}
	for {
		status, wire := take()
		if status != http.StatusOK {
			break
		}
		first[wire] = true
	}
	if len(first) != session.DefaultPoolSize {
		t.Fatalf("the relay handed out %d KeyPackages, want the agent's pool of %d", len(first), session.DefaultPoolSize)
	}

	start, end := w.window.Next(w.clock.Now())
	w.clock.Set(start)
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	second := map[string]bool{}
	for {
		status, wire := take()
		if status != http.StatusOK {
			break
		}
		if first[wire] {
			t.Fatalf("a KeyPackage handed out before was handed out again (RFC 9420, Section 16.8)")
		}
		second[wire] = true
	}
	if len(second) != session.DefaultPoolSize {
		t.Errorf("after the wake the relay handed out %d new KeyPackages, want %d", len(second), session.DefaultPoolSize)
	}
	w.clock.Set(end)
	w.nextWake()
	w.shutdown()
}

// takeKeyPackage fetches one KeyPackage of w's agent from the relay,
// with a token, and returns the status, the wire member and the
// lastResort member of the answer.
func (w *world) takeKeyPackage() (int, string, bool) {
	w.t.Helper()
	resp := getKeyPackage(w.t, w.srv.URL+"/a/"+w.key.DID().String()+"/mls/key-package", w.clock.Now())
	defer resp.Body.Close()
	var v struct {
		Wire       string
		LastResort bool
	}
	json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v.Wire, v.LastResort
}

// drainWindow opens the window from start to end, checks that the agent
// delivered exactly want (in any order) by the end of its drain, and
// returns the report of the wake that ends with the window.
func (w *world) drainWindow(start, end time.Time, want []string) runtime.WakeReport {
	w.t.Helper()
	w.clock.Set(start)
	w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
	got, want := slices.Sorted(slices.Values(w.rec.IDs())), slices.Sorted(slices.Values(want))
	if diff := cmp.Diff(want, got); diff != "" {
		w.t.Errorf("delivered (-want +got):\n%s", diff)
	}
	w.clock.Set(end)
	return w.nextWake()
}
