package ledger

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/store"
)

var t0 = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

// env is one bbolt file that tests reopen to simulate a restart.
type env struct {
	path  string
	clock *clocktest.Clock
	db    *bolt.DB
	l     *Ledger
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{path: filepath.Join(t.TempDir(), "agent.db"), clock: clocktest.New(t0)}
	e.open(t)
	t.Cleanup(func() { e.db.Close() })
	return e
}

func (e *env) open(t testing.TB) {
	t.Helper()
	db, err := store.Open(e.path, &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(db, &Options{Clock: e.clock, Retention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	e.db, e.l = db, l
}

// restart closes the file and opens it again: a new incarnation, as after
// a crash.
func (e *env) restart(t testing.TB) {
	t.Helper()
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	e.open(t)
}

func (e *env) update(t testing.TB, fn func(tx *bolt.Tx) error) error {
	t.Helper()
	return e.db.Update(fn)
}

func (e *env) get(t testing.TB, key string) Entry {
	t.Helper()
	var got Entry
	err := e.db.View(func(tx *bolt.Tx) error {
		var err error
		got, err = e.l.Get(tx, key)
		return err
	})
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return got
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	r := Reservation{Key: "k1", Action: "action:capture", Counterparty: "did:key:zAlice", EffectID: "op-1"}
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, r) }); err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	if got := e.get(t, "k1"); got.State != Reserved || got.EffectID != "op-1" || got.Incarnation != e.l.Incarnation() {
		t.Fatalf("after Reserve: %+v", got)
	}
	// A second reservation of the same key while in flight is refused.
	err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, r) })
	if !errors.Is(err, ErrInFlight) {
		t.Fatalf("Reserve in flight: err = %v, want ErrInFlight", err)
	}
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.SetEffectID(tx, "k1", "op-1b") }); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(1500 * time.Millisecond)
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Complete(tx, "k1", []byte("ok"), "") }); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := Entry{
		Key: "k1", State: Completed, Action: "action:capture", Counterparty: "did:key:zAlice",
		EffectID: "op-1b", Incarnation: e.l.Incarnation(), ReservedAt: t0, ResolvedAt: t0.Add(1500 * time.Millisecond),
		Receipt: []byte("ok"),
	}
	if diff := cmp.Diff(want, e.get(t, "k1")); diff != "" {
		t.Fatalf("after Complete (-want +got):\n%s", diff)
	}
	// A completed key is refused with its receipt, also after a restart.
	for _, restart := range []bool{false, true} {
		if restart {
			e.restart(t)
		}
		err = e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, r) })
		var ke *KeyError
		if !errors.As(err, &ke) || !errors.Is(err, ErrCompleted) || string(ke.Entry.Receipt) != "ok" {
			t.Fatalf("Reserve completed key (restart %v): err = %v, want ErrCompleted with receipt", restart, err)
		}
	}
}

func TestCrashBetweenReserveAndComplete(t *testing.T) {
	e := newEnv(t)
	r := Reservation{Key: "pay-7", Action: "action:capture"}
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, r) }); err != nil {
		t.Fatal(err)
	}
	old := e.l.Incarnation()
	e.restart(t)
	if e.l.Incarnation() != old+1 {
		t.Fatalf("incarnation after restart = %d, want %d", e.l.Incarnation(), old+1)
	}
	if got := e.get(t, "pay-7"); got.State != Indeterminate {
		t.Fatalf("state after restart = %v, want indeterminate", got.State)
	}
	// Time never releases it.
	e.clock.Advance(365 * 24 * time.Hour)
	e.restart(t)
	err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, r) })
	if !errors.Is(err, ErrIndeterminate) {
		t.Fatalf("Reserve after restart: err = %v, want ErrIndeterminate", err)
	}
	// The dead incarnation's completion cannot land either.
	err = e.update(t, func(tx *bolt.Tx) error { return e.l.Complete(tx, "pay-7", []byte("late"), "") })
	if !errors.Is(err, ErrIndeterminate) {
		t.Fatalf("Complete after restart: err = %v, want ErrIndeterminate", err)
	}
	listed := 0
	e.db.View(func(tx *bolt.Tx) error {
		return e.l.List(tx, func(en Entry) bool {
			if en.State == Indeterminate {
				listed++
			}
			return true
		})
	})
	if listed != 1 {
		t.Fatalf("List: %d indeterminate entries, want 1", listed)
	}
}

func TestReconcile(t *testing.T) {
	tests := []struct {
		name      string
		res       Resolution
		wantState State
		// whether the same key can be reserved afterwards
		wantReserve error
	}{
		{"happened", Resolution{Happened: true, Receipt: []byte("captured"), EffectID: "psp-42", Note: "checked PSP"}, Completed, ErrCompleted},
		{"did not happen", Resolution{Note: "no charge at PSP"}, Released, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := Reservation{Key: "k", Action: "action:capture"}
			if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, r) }); err != nil {
				t.Fatal(err)
			}
			// Reconciling a key this incarnation still runs is refused.
			if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reconcile(tx, "k", tt.res) }); !errors.Is(err, ErrInFlight) {
				t.Fatalf("Reconcile in flight: err = %v, want ErrInFlight", err)
			}
			e.restart(t)
			if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reconcile(tx, "k", tt.res) }); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			got := e.get(t, "k")
			if got.State != tt.wantState || !got.Reconciled || got.Note != tt.res.Note {
				t.Fatalf("after Reconcile: %+v", got)
			}
			if tt.res.Happened && (string(got.Receipt) != "captured" || got.EffectID != "psp-42") {
				t.Fatalf("receipt/effect id not recorded: %+v", got)
			}
			// A resolved key cannot be reconciled again.
			if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reconcile(tx, "k", tt.res) }); !errors.Is(err, ErrNotReserved) {
				t.Fatalf("second Reconcile: err = %v, want ErrNotReserved", err)
			}
			err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, r) })
			if !errors.Is(err, tt.wantReserve) || (tt.wantReserve == nil && err != nil) {
				t.Fatalf("Reserve after Reconcile: err = %v, want %v", err, tt.wantReserve)
			}
		})
	}
}

func TestReconcileUnknown(t *testing.T) {
	e := newEnv(t)
	err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reconcile(tx, "nope", Resolution{}) })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Reconcile unknown: err = %v, want ErrNotFound", err)
	}
}

func TestBadKeys(t *testing.T) {
	e := newEnv(t)
	for _, k := range []string{"", string(make([]byte, MaxKeyLen+1))} {
		err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, Reservation{Key: k}) })
		if !errors.Is(err, ErrBadKey) {
			t.Errorf("Reserve(len %d): err = %v, want ErrBadKey", len(k), err)
		}
	}
}

func TestCompleteAndReleaseNeedReservation(t *testing.T) {
	e := newEnv(t)
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Complete(tx, "x", nil, "") }); !errors.Is(err, ErrNotReserved) {
		t.Errorf("Complete unknown: err = %v, want ErrNotReserved", err)
	}
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Release(tx, "x", "") }); !errors.Is(err, ErrNotReserved) {
		t.Errorf("Release unknown: err = %v, want ErrNotReserved", err)
	}
}

// TestReservationNeedsCommit shows a reservation counts only once the
// caller's transaction committed: a rolled-back batch leaves nothing.
func TestReservationNeedsCommit(t *testing.T) {
	e := newEnv(t)
	boom := errors.New("batch failed")
	err := e.update(t, func(tx *bolt.Tx) error {
		if err := e.l.Reserve(tx, Reservation{Key: "k"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	err = e.db.View(func(tx *bolt.Tx) error { _, err := e.l.Get(tx, "k"); return err })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after rollback: err = %v, want ErrNotFound", err)
	}
}

func TestRetention(t *testing.T) {
	e := newEnv(t)
	for _, k := range []string{"done", "released", "stuck"} {
		if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, Reservation{Key: k}) }); err != nil {
			t.Fatal(err)
		}
	}
	e.update(t, func(tx *bolt.Tx) error { return e.l.Complete(tx, "done", nil, "") })
	e.update(t, func(tx *bolt.Tx) error { return e.l.Release(tx, "released", "not started") })
	e.clock.Advance(25 * time.Hour) // past the 24 h retention
	e.restart(t)
	var keys []string
	e.db.View(func(tx *bolt.Tx) error {
		return e.l.List(tx, func(en Entry) bool { keys = append(keys, en.Key+"="+en.State.String()); return true })
	})
	if diff := cmp.Diff([]string{"stuck=indeterminate"}, keys); diff != "" {
		t.Fatalf("entries after retention sweep (-want +got):\n%s", diff)
	}
}

func TestDo(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	runs := 0
	effect := func(context.Context) ([]byte, string, error) { runs++; return []byte("r"), "sys-1", nil }
	got, err := e.l.Do(ctx, Reservation{Key: "a"}, effect)
	if err != nil || got.State != Completed || got.EffectID != "sys-1" {
		t.Fatalf("Do = %+v, %v", got, err)
	}
	if _, err := e.l.Do(ctx, Reservation{Key: "a"}, effect); !errors.Is(err, ErrCompleted) {
		t.Fatalf("second Do: err = %v, want ErrCompleted", err)
	}
	if runs != 1 {
		t.Fatalf("effect ran %d times, want 1", runs)
	}

	notStarted := func(context.Context) ([]byte, string, error) {
		return nil, "", fmt.Errorf("exec: %w", ErrNotStarted)
	}
	if _, err := e.l.Do(ctx, Reservation{Key: "b"}, notStarted); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Do not started: err = %v", err)
	}
	if st := e.get(t, "b").State; st != Released {
		t.Fatalf("state after not-started effect = %v, want released", st)
	}

	failed := func(context.Context) ([]byte, string, error) { return nil, "", errors.New("connection reset") }
	if _, err := e.l.Do(ctx, Reservation{Key: "c"}, failed); err == nil {
		t.Fatal("Do with failing effect: nil error")
	}
	e.restart(t)
	if st := e.get(t, "c").State; st != Indeterminate {
		t.Fatalf("state of an effect that failed midway, after restart = %v, want indeterminate", st)
	}
}

func TestAbandon(t *testing.T) {
	e := newEnv(t)
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, Reservation{Key: "k"}) }); err != nil {
		t.Fatal(err)
	}
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Abandon(tx, "k", "handler timed out") }); err != nil {
		t.Fatal(err)
	}
	if got := e.get(t, "k"); got.State != Indeterminate || got.Note != "handler timed out" {
		t.Fatalf("after Abandon: %+v", got)
	}
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reserve(tx, Reservation{Key: "k"}) }); !errors.Is(err, ErrIndeterminate) {
		t.Fatalf("Reserve after Abandon: err = %v, want ErrIndeterminate", err)
	}
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.Reconcile(tx, "k", Resolution{Note: "no effect"}) }); err != nil {
		t.Fatalf("Reconcile after Abandon: %v", err)
	}
}
