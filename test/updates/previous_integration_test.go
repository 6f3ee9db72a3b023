//go:build integration

package updates

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// TestPreviousReleaseAgentInARollout: the previous release's agent
// (testenv.PreviousRelease, built from git history), which has no update
// client, linked to this tree's relay while a rollout offers it this
// tree's build. Its link decoder skips state-ok's offer member: it stays
// linked and keeps publishing its pulses, answered with offers, and the
// rollout counts it pending, never failed (docs/upgrades.md, "Update
// offers").
func TestPreviousReleaseAgentInARollout(t *testing.T) {
	old := filepath.Join(testenv.BuildAt(t, testenv.PreviousRelease, "torpor-agent"), "torpor-agent")
	w := newRolloutWorld(t)
	key, data := filepath.Join(w.dir, "old.key"), filepath.Join(w.dir, "old")
	keygen(t, key)
	p := testenv.Start(t, old, "--key", key, "--data-dir", data, "--relay", w.relay.URL, "--mode", "always_on",
		"--name", "old", "--purposes", "comms:*", "--handler", "*=exec:/bin/true",
		"--time-scale", offerScale, "--time-epoch", w.epoch)
	w.relay.Wait(t, regexp.MustCompile(`msg="state published" .*mode=always_on`))
	w.start(t)
	// Each state the relay answers from now on offers the build; two mean
	// the old agent took an answer with an offer and published again.
	before := w.offers(t)
	limit := time.Now().Add(time.Minute)
	for w.offers(t) < before+2 {
		if time.Now().After(limit) {
			t.Fatalf("the previous release's agent published no two states after the rollout started:\n%s", p.Log())
		}
		time.Sleep(200 * time.Millisecond) // polling the relay's metrics, not waiting for the agent's time
	}
	var r operatorapi.Rollout
	out := w.rollout(t, "--json", "status", "r1")
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if c := r.Counts; c.Devices != 1 || c.Pending != 1 || c.Refused+c.RolledBack+c.Installed != 0 {
		t.Errorf("rollout counts %+v; want the previous release's agent pending", c)
	}
	if log := p.Log(); strings.Contains(log, "level=ERROR") || strings.Contains(log, "state-ok") && strings.Contains(log, "level=WARN") {
		t.Errorf("the previous release's agent logged a fault:\n%s", log)
	}
}

// offers is the relay's count of state answers that offered an update.
func (w *rolloutWorld) offers(t *testing.T) int {
	t.Helper()
	a := relaytest.Do(t, "GET", w.relay.URL+"/metrics", nil, nil)
	m := regexp.MustCompile(`(?m)^torpor_relay_update_offers_total (\d+)`).FindSubmatch(a.Body)
	if m == nil {
		t.Fatalf("no torpor_relay_update_offers_total in /metrics:\n%s", a.Body)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
