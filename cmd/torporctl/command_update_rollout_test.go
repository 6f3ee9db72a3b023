package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// TestUpdateRolloutCommand: torporctl update rollout starts a rollout of
// the relay's 10 devices in 2 waves of cohorts, shows it, pauses, resumes
// and aborts it with an operator's key (text and --json); a stranger's
// key and bad flags fail with the reason.
func TestUpdateRolloutCommand(t *testing.T) {
	op, stranger := didtest.New(t), didtest.New(t)
	st, err := rollouts.OpenBolt(filepath.Join(t.TempDir(), "rollouts.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := worldtest.Start(t, relay.Config{Access: relay.Access{Operators: []did.DID{op.DID()}}, Stores: relay.Stores{Rollouts: st}})
	for i := range 10 {
		s := agents.State{Mode: wake.HourlyWake, Window: wake.Window{Minute: i % 5, Length: 5 * time.Minute}, UpdatedAt: time.Now()}
		if err := r.States.Put(context.Background(), didtest.New(t).DID().String(), s, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	opKey, strangerKey := keyFile(t, op), keyFile(t, stranger)
	ctl := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := run(context.Background(), append([]string{"update", "rollout", "--relay", r.URL}, args...), &out, &out)
		return code, out.String()
	}
	start := []string{"--key", opKey, "--target", "torpor-agent/1.4.0", "--version", "1.4.0", "--waves", "20,100", "--threshold", "50", "--min-executed", "2"}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{append([]string{"start", "r1"}, start[2:]...), 2, ""},
		{[]string{"--key", strangerKey, "status"}, 1, "403 Forbidden: not_operator"},
		{[]string{"--key", opKey, "start", "r1", "--version", "1"}, 2, "start needs --target and --version"},
		{append(start, "--waves", "50", "start", "r1"), 1, "the last wave must be 100"},
		{append(start, "start", "r1"), 0, "10 devices: 0 installed, 0 rolled back, 0 refused, 2 pending, 8 waiting"},
		{append(start, "start", "r1"), 1, "409 Conflict"},
		{[]string{"--key", opKey, "status", "r1"}, 0, "rollout r1: torpor-agent/1.4.0 1.4.0, running"},
		{[]string{"--key", opKey, "--reason", "look first", "pause", "r1"}, 0, "paused (look first)"},
		{[]string{"--key", opKey, "resume", "r1"}, 0, "running"},
		{[]string{"--key", opKey, "--reason", "bad build", "abort", "r1"}, 0, "aborted (bad build)"},
		{[]string{"--key", opKey, "--json", "status"}, 0, `"state":"aborted"`},
		{[]string{"--key", opKey, "status", "nope"}, 1, "404 Not Found"},
		{[]string{"--key", opKey, "drop", "r1"}, 2, `unknown subcommand "drop"`},
	}
	for i, s := range steps {
		code, out := ctl(s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Errorf("step %d: torporctl update rollout %s = %d\n%s\nwant %d with %q", i, strings.Join(s.args, " "), code, out, s.code, s.want)
		}
	}
	_, out := ctl("--key", opKey, "status", "r1")
	if !strings.HasPrefix(firstWave(out), "1 20 % 1 ") || !strings.HasSuffix(firstWave(out), " 2 0 0 2") {
		t.Errorf("the first wave is not one cohort of 2 devices, 20 %%: %q in\n%s", firstWave(out), out)
	}
}

// firstWave is the line of wave 1 in printRollout's output, its fields
// joined by one space.
func firstWave(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "1" {
			return strings.Join(f, " ")
		}
	}
	return ""
}

// TestPrintRolloutLeft: status counts the devices left in a rollout (a
// device the relay forgot, in its own rollouts as in a tenant's) beside
// the others, lists each with its reason, and its waves' FAILED column
// holds the rolled back and refused devices, not those left.
func TestPrintRolloutLeft(t *testing.T) {
	at := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	c := operatorapi.RolloutCounts{Devices: 4, Installed: 1, RolledBack: 1, Refused: 1, Left: 1}
	r := operatorapi.Rollout{ID: "r1", Target: operatorapi.RolloutTarget{Name: "torpor-agent/1.4.0", Version: "1.4.0"}, State: "done",
		Counts: c, Waves: []operatorapi.RolloutWave{{Percent: 100, Cohorts: []int{60}, Started: at, Counts: c}},
		Failures: []operatorapi.RolloutFailure{{Device: "did:key:zGone", Outcome: "left", Reason: "forgotten for its silence", At: at}}}
	var out bytes.Buffer
	printRollout(&out, r)
	for _, want := range []string{"4 devices: 1 installed, 1 rolled back, 1 refused, 0 pending, 0 waiting, 1 left\n",
		"did:key:zGone left at 2026-12-06T07:00:00Z: forgotten for its silence"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printRollout:\n%s\nwant %q", out.String(), want)
		}
	}
	if w := firstWave(out.String()); !strings.HasSuffix(w, " 4 1 2 0") {
		t.Errorf("the wave's line %q; want 4 devices, 1 installed, 2 failed, 0 pending", w)
	}
}
