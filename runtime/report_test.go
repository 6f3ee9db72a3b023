package runtime

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/runtime/drain"
)

// TestHeldActionLogsItsOwnLine: a held action is logged as "action held"
// with its ledger key, not as a rejected record, and one the gate let run
// as "action ran" with what allowed it; rejections and deferrals
// keep their warning, and the counters on the wake line are untouched.
func TestHeldActionLogsItsOwnLine(t *testing.T) {
	var out strings.Builder
	l := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	r := WakeReport{Reason: "timer", Mode: "hourly_wake", Drain: drain.Report{Records: 3, Acked: 3, Held: 1, Rejected: map[string]int{"expired": 1},
		Diagnostics: []drain.Diagnostic{
			{Seq: 4, Cause: "held:needs-confirmation", Detail: "did:key:z6MkAlice order-9"},
			{Seq: 8, Cause: "ran:envelope", Detail: "did:key:z6MkBob pay-1"},
			{Seq: 5, Cause: "expired", Detail: "governed: expired"},
			{Seq: 6, Cause: drain.CauseMLSDeferred, Detail: "part 0: unknown group"},
			{Seq: 7, Cause: drain.CauseHandOff, Detail: "object \"o-1\": handler down"},
		}, HandOffFailed: 1}}
	logDiagnostics(l, r.Drain.Diagnostics, msgRejected) // as the drain does, batch by batch
	r.log(l)
	got := out.String()
	for _, want := range []string{
		`level=INFO msg="action held" seq=4 reason=needs-confirmation key="did:key:z6MkAlice order-9"`,
		`level=INFO msg="action ran" seq=8 reason=envelope key="did:key:z6MkBob pay-1"`,
		`level=WARN msg="record rejected or deferred" seq=5 cause=expired detail="governed: expired"`,
		`level=WARN msg="record rejected or deferred" seq=6 cause=mls-deferred`,
		`held=1`,
		`level=WARN msg="hand-off failed" seq=7 cause=hand-off-failed`,
		`handOffFailed=1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "cause=held:") || strings.Contains(got, "cause=ran:") {
		t.Errorf("a held action logged as a rejection:\n%s", got)
	}
}
