package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// listedRollouts is Rollouts over a fixed list: the console only renders
// what the relay's rollouts (transport/relay, rollout_view.go) give it.
type listedRollouts struct {
	rs      []operatorapi.Rollout
	updates map[string][]operatorapi.DeviceUpdate
}

func (l listedRollouts) Rollouts(context.Context) ([]operatorapi.Rollout, error) { return l.rs, nil }
func (l listedRollouts) DeviceUpdates(_ context.Context, d string) ([]operatorapi.DeviceUpdate, error) {
	return l.updates[d], nil
}

func newRolloutSite(t *testing.T, ro Rollouts) *site {
	t.Helper()
	return newSiteWith(t, "", func(c *Config) { c.Rollouts = ro })
}

// TestRolloutsPage: the rollouts page shows each rollout's state and
// reason, its waves (a wave not started as waiting) and its failures,
// escaped, under the console's CSP; the device page shows the device's
// rollouts and outcome; the API answers the list as JSON; neither is
// served without a session or token; a relay without rollouts answers
// 404 and its device page has no Updates section.
func TestRolloutsPage(t *testing.T) {
	dev := didtest.Key(t, 1).DID().String()
	counts := operatorapi.RolloutCounts{Devices: 10, Installed: 1, RolledBack: 2, Pending: 1, Waiting: 6}
	r := operatorapi.Rollout{ID: "agent-1.4.0", Target: operatorapi.RolloutTarget{Name: "torpor-agent/1.4.0", Version: "1.4.0"}, State: "paused",
		Reason: "failure rate 66.7 % (2 of 3 reported) reached the threshold 50 %", Created: t0, Counts: counts,
		Waves: []operatorapi.RolloutWave{{Percent: 40, Cohorts: []int{60, 120}, Started: t0, Counts: operatorapi.RolloutCounts{Devices: 4, Installed: 1, RolledBack: 2, Pending: 1}},
			{Percent: 100, Cohorts: []int{180}, Counts: operatorapi.RolloutCounts{Devices: 6, Waiting: 6}}},
		Failures: []operatorapi.RolloutFailure{{Device: dev, Outcome: "rolled-back", Reason: "<script>exit 2</script>", At: t0.Add(time.Minute)}}}
	s := newRolloutSite(t, listedRollouts{rs: []operatorapi.Rollout{r}, updates: map[string][]operatorapi.DeviceUpdate{
		dev: {{Rollout: r.ID, Version: "1.4.0", State: "paused", Outcome: "rolled-back", Reason: "trial boot hung", At: t0.Add(time.Minute)}}}})
	if a := s.do(t, "GET", "/fleet/rollouts", nil, nil); a.status != http.StatusUnauthorized || strings.Contains(a.body, "agent-1.4.0") {
		t.Errorf("page without a session: %d", a.status)
	}
	c := s.login(t)
	a := s.do(t, "GET", "/fleet/rollouts", nil, c)
	for _, want := range []string{"agent-1.4.0: torpor-agent/1.4.0 1.4.0", `class="state paused"`, "66.7 %", "10 devices: 1 installed · 2 rolled back · 0 refused · 1 pending · 6 waiting",
		`<td>1</td><td>40 %</td><td>2</td>`, `<span class="muted">waiting</span>`, "&lt;script&gt;exit 2&lt;/script&gt;", `href="/fleet/device/` + dev} {
		if !strings.Contains(a.body, want) {
			t.Errorf("rollouts page lacks %q:\n%s", want, a.body)
		}
	}
	if a.status != 200 || strings.Contains(a.body, "<script>exit") || !strings.Contains(a.h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("rollouts page: %d, CSP %q", a.status, a.h.Get("Content-Security-Policy"))
	}
	if a := s.do(t, "GET", "/fleet/device/"+dev, nil, c); !strings.Contains(a.body, `<section id="updates">`) || !strings.Contains(a.body, "trial boot hung") {
		t.Errorf("device page without its update:\n%s", a.body)
	}
	tok, err := bearer.IssuePurpose(s.op, s.origin, bearer.PurposeFleet, s.clk.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a = s.do(t, "GET", "/fleet/api/rollouts", map[string]string{"Authorization": bearer.Authorization(tok)}, nil)
	var l operatorapi.RolloutList
	if err := json.Unmarshal([]byte(a.body), &l); err != nil || len(l.Rollouts) != 1 || l.Rollouts[0].Counts != counts {
		t.Errorf("API: %d %s, %v", a.status, a.body, err)
	}
	none := newRolloutSite(t, nil)
	nc := none.login(t)
	if a := none.do(t, "GET", "/fleet/rollouts", nil, nc); a.status != 404 {
		t.Errorf("without rollouts: %d", a.status)
	}
	if a := none.do(t, "GET", "/fleet/device/"+dev, nil, nc); strings.Contains(a.body, `id="updates"`) {
		t.Errorf("a relay without rollouts shows an Updates section")
	}
}
