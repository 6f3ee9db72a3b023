package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/wake"
)

// newHoldWorld is an always_on cmdWorld whose operator is the agent's
// owner, so consequential actions (action:*) are held for it, and whose
// deliveries go to h.
func newHoldWorld(t *testing.T, h deliver.Handler) *cmdWorld {
	w := newCmdWorldWith(t, wake.AlwaysOn, func(w *cmdWorld, cfg *runtime.Config, _ *manage.CommandsConfig) {
		cfg.Owner = w.OpKey.DID()
		cfg.Routes = []deliver.Route{{Pattern: "*", Name: "app", Handler: h}}
	})
	w.Run()
	w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAwake })
	w.WaitPhase(runtime.PhasePublish) // the relay delivers live from here
	return w
}

// holdAction sends a consequential action through the relay, live, and
// returns the ledger key under which the agent holds it for the owner.
func (w *cmdWorld) holdAction(idempotencyKey string) string {
	w.T.Helper()
	sender := runtimetest.Key(w.T, 11)
	obj := runtimetest.Object(w.T, sender, "action:open-valve", w.Clock.Now(), time.Hour, map[string]any{"idempotencyKey": idempotencyKey})
	if code, _ := w.Post(sender, runtimetest.Body(w.T, runtimetest.DataPart(w.T, obj))); code != http.StatusOK {
		w.T.Fatalf("posting the action %s: %d, want 200 (live)", idempotencyKey, code)
	}
	for _, h := range w.holds() {
		if h.Key == sender.DID().String()+" "+idempotencyKey {
			return h.Key
		}
	}
	w.T.Fatalf("the action %s is not held: holds %+v", idempotencyKey, w.holds())
	return ""
}

type heldAction struct{ Key, Purpose, Reason string }

// statusResult is the part of the status command's result these tests read.
type statusResult struct {
	Status        envelope.Status
	Holds         []heldAction
	Ledger        map[string]int
	Indeterminate []struct{ Key string }
}

func (w *cmdWorld) statusResult() statusResult {
	w.T.Helper()
	r := w.Command(command.OpStatus, nil)
	var res statusResult
	if r.Outcome != command.OutcomeOK || json.Unmarshal(r.Result, &res) != nil {
		w.T.Fatalf("status = %+v %s", r, r.Result)
	}
	return res
}

func (w *cmdWorld) holds() []heldAction { w.T.Helper(); return w.statusResult().Holds }

// TestDenyOverMQTT: an action held for the owner and denied over MQTT is
// dropped: the reply names it as denied, it leaves the holds, and neither
// a confirm nor a resume runs it afterwards.
func TestDenyOverMQTT(t *testing.T) {
	rec := &deliver.Recorder{}
	w := newHoldWorld(t, rec)
	key := w.holdAction("valve-7")
	if st := w.AwaitStatus(func(s envelope.Status) bool { return s.Held == 1 }); st.Held != 1 {
		t.Fatalf("status held = %d, want 1", st.Held)
	}

	r := w.Command(command.OpDeny, &command.HoldArgs{Hold: key})
	var res struct {
		Key, Purpose string
		Denied       bool
	}
	if r.Outcome != command.OutcomeOK || json.Unmarshal(r.Result, &res) != nil || res.Key != key || res.Purpose != "action:open-valve" || !res.Denied {
		t.Fatalf("deny %q = %+v %s; want ok, that action denied", key, r, r.Result)
	}
	if hs := w.holds(); len(hs) != 0 {
		t.Fatalf("holds after deny = %+v, want none", hs)
	}
	w.AwaitStatus(func(s envelope.Status) bool { return s.Held == 0 })

	// Nothing brings it back.
	for _, op := range []string{command.OpConfirm, command.OpDeny} {
		if r := w.Command(op, &command.HoldArgs{Hold: key}); r.Outcome != command.OutcomeFailed || r.Reason != "no-hold" {
			t.Errorf("%s after deny = %+v, want failed (no-hold)", op, r)
		}
	}
	if r := w.Command(command.OpHalt, &command.NoteArgs{}); r.Outcome != command.OutcomeOK {
		t.Fatalf("halt = %+v", r)
	}
	if r := w.Command(command.OpResume, &command.NoteArgs{}); r.Outcome != command.OutcomeOK || string(r.Result) != `{"halted":false,"ran":0}` {
		t.Errorf("resume after deny = %+v %s, want nothing run", r, r.Result)
	}
	if got := rec.IDs(); len(got) != 0 {
		t.Errorf("the denied action was delivered: %v", got)
	}
	// The ledger never saw the action (commands have keys of their own
	// there, so look the action's key up).
	if r := w.Command(command.OpReconcile, &command.ReconcileArgs{Key: key, Note: "n"}); r.Outcome != command.OutcomeFailed || r.Reason != "no-key" {
		t.Errorf("reconcile of the denied action's key = %+v, want failed (no-key): nothing reserved", r)
	}
}

// mayHaveRun is a handler whose effects fail in a way that leaves them
// unknown (a timeout at the system of record): the ledger key becomes
// indeterminate.
type mayHaveRun struct {
	mu   sync.Mutex
	keys []string
}

func (h *mayHaveRun) Deliver(_ context.Context, d deliver.Delivery) (deliver.Outcome, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keys = append(h.keys, d.ObjectID)
	return deliver.Outcome{}, errors.New("timeout talking to the valve controller")
}

func (h *mayHaveRun) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.keys)
}

// TestReconcileOverMQTT: two confirmed actions whose effects may or may
// not have happened leave indeterminate keys; the operator resolves one as
// completed (with the system of record's result) and one as released,
// over MQTT. A resolved key cannot be reconciled again.
func TestReconcileOverMQTT(t *testing.T) {
	h := &mayHaveRun{}
	w := newHoldWorld(t, h)
	paid, notPaid := w.holdAction("pay-1"), w.holdAction("pay-2")
	for _, key := range []string{paid, notPaid} {
		r := w.Command(command.OpConfirm, &command.HoldArgs{Hold: key})
		var res struct{ Ledger string }
		if r.Outcome != command.OutcomeOK || json.Unmarshal(r.Result, &res) != nil || res.Ledger != "indeterminate" {
			t.Fatalf("confirm %q = %+v %s; want ok with the ledger key indeterminate", key, r, r.Result)
		}
	}
	if n := h.calls(); n != 2 {
		t.Fatalf("handler ran %d times, want once per confirmed action", n)
	}
	w.AwaitStatus(func(s envelope.Status) bool { return s.Indeterminate == 2 })
	res := w.statusResult()
	var keys []string
	for _, k := range res.Indeterminate {
		keys = append(keys, k.Key)
	}
	slices.Sort(keys)
	want := []string{paid, notPaid}
	slices.Sort(want)
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Fatalf("status lists indeterminate keys (-want +got):\n%s", diff)
	}

	tests := []struct {
		name string
		args command.ReconcileArgs
		want string // the reply's result
	}{
		{"happened", command.ReconcileArgs{Key: paid, Happened: true, Receipt: `{"paid":12}`, EffectID: "tx-42", Note: "checked the bank"},
			`{"effectId":"tx-42","key":"` + paid + `","state":"completed"}`},
		{"released", command.ReconcileArgs{Key: notPaid, Note: "the bank has no such payment"},
			`{"effectId":"","key":"` + notPaid + `","state":"released"}`},
	}
	for _, tt := range tests {
		r := w.Command(command.OpReconcile, &tt.args)
		if r.Outcome != command.OutcomeOK || string(r.Result) != tt.want {
			t.Errorf("reconcile %s = %+v %s, want ok %s", tt.name, r, r.Result, tt.want)
		}
		if again := w.Command(command.OpReconcile, &tt.args); again.Outcome != command.OutcomeFailed || again.Reason != "not-indeterminate" {
			t.Errorf("reconcile %s again = %+v, want failed (not-indeterminate)", tt.name, again)
		}
	}
	w.AwaitStatus(func(s envelope.Status) bool { return s.Indeterminate == 0 })
	res = w.statusResult()
	// The commands' own keys complete too; only the action was released.
	if res.Ledger["released"] != 1 || res.Ledger["indeterminate"] != 0 || len(res.Indeterminate) != 0 {
		t.Errorf("ledger after reconcile = %v, indeterminate %v; want one released, none indeterminate", res.Ledger, res.Indeterminate)
	}
	if n := h.calls(); n != 2 {
		t.Errorf("handler ran %d times, want 2: reconcile runs nothing", n)
	}
}
