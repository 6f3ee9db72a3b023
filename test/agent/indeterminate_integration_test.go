//go:build integration

package agent

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// indeterminateCase is one operator verdict on the indeterminate key and
// what a new request for the same intent does after it.
type indeterminateCase struct {
	name string
	// reconcile is the operator's verdict on the indeterminate key.
	reconcile []string
	// afterReconcile is what a new request for the same intent does.
	wantState   string
	wantEffects []string
	wantRefused int
}

var indeterminateCases = []indeterminateCase{
	{
		name:        "the system of record shows the effect",
		reconcile:   []string{"--happened", "--receipt", "captured at PSP", "--effect-id", "psp-1"},
		wantState:   "completed",
		wantEffects: []string{"order-1"},
		wantRefused: 1, // completed: the stored receipt answers
	},
	{
		name:        "the effect verifiably did not happen",
		reconcile:   []string{"--released"},
		wantState:   "completed",                    // it ran afresh and completed
		wantEffects: []string{"order-1", "order-1"}, // once before the crash, once after the release
	},
}

// TestIndeterminateKeyAfterCrash: the agent is killed with SIGKILL after
// an allowed action's effect happened and before its completion was
// recorded. On restart the key is indeterminate: neither the redelivered
// object nor a new object for the same intent runs the effect again, time
// does not release it, and only the operator's reconcile resolves it.
func TestIndeterminateKeyAfterCrash(t *testing.T) {
	bin := testenv.Binary(t, "torpor-agent")
	for _, tt := range indeterminateCases {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			key := aliceKey.DID().String() + " order-1"
			first := w.action("a-1", "order-1")
			w.policy()
			w.enqueue(aliceKey, first)
			w.drainAndKillDuringEffect()
			if got := w.effects(); !cmp.Equal(got, []string{"order-1"}) {
				t.Fatalf("effects before the restart: %v, want one", got)
			}
			checkIndeterminateAfterRestart(t, w, key, first)
			reconcileIndeterminate(t, w, bin, key, tt)
		})
	}
}

// checkIndeterminateAfterRestart restarts the agent: the relay delivers
// first, the object of the crashed run, again (the ack may or may not
// have happened) and the sender retries the same intent with a new
// object. Neither runs the effect, and key stays indeterminate.
func checkIndeterminateAfterRestart(t *testing.T, w *world, key string, first []byte) {
	t.Helper()
	w.enqueue(aliceKey, first, w.action("a-2", "order-1"))
	rep := w.drain()
	if rep.Rejected["replay"] != 1 || rep.Refused != 1 || rep.Ran != 0 {
		t.Fatalf("after the restart: %v; want the replay rejected and the new object refused", rep)
	}
	if !hasDiag(rep.Diagnostics, "refused:indeterminate", key) {
		t.Errorf("no refused:indeterminate diagnostic for %q in %+v", key, rep.Diagnostics)
	}
	if got := w.effects(); len(got) != 1 {
		t.Fatalf("effects after the restart: %v, want still one", got)
	}
	if st := w.ledgerState(key); st != "indeterminate" {
		t.Fatalf("ledger state %s, want indeterminate", st)
	}
}

// reconcileIndeterminate has the operator see key and reconcile it against
// the system of record with tt's verdict, then checks what a new request
// for the same intent does.
func reconcileIndeterminate(t *testing.T, w *world, bin, key string, tt indeterminateCase) {
	t.Helper()
	out := w.operator(bin, "ledger")
	if !regexp.MustCompile(`(?m)^indeterminate +` + regexp.QuoteMeta(key)).MatchString(out) {
		t.Fatalf("torpor-agent ledger does not list %q as indeterminate:\n%s", key, out)
	}
	w.operator(bin, append(append([]string{"reconcile"}, tt.reconcile...), "--note", "checked the PSP", key)...)

	w.enqueue(aliceKey, w.action("a-3", "order-1"))
	rep := w.drain()
	if rep.Refused != tt.wantRefused {
		t.Errorf("after reconcile: %v; want %d refused", rep, tt.wantRefused)
	}
	if got := w.effects(); !cmp.Equal(got, tt.wantEffects) {
		t.Errorf("effects after reconcile: %v, want %v", got, tt.wantEffects)
	}
	if st := w.ledgerState(key); st != tt.wantState {
		t.Errorf("ledger state after reconcile: %s, want %s", st, tt.wantState)
	}
}

func hasDiag(ds []drain.Diagnostic, cause, detail string) bool {
	for _, d := range ds {
		if d.Cause == cause && strings.Contains(d.Detail, detail) {
			return true
		}
	}
	return false
}
