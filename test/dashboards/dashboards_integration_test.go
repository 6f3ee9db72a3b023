//go:build integration

package dashboards

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
	"github.com/torpor-dev/torpor/wake"
)

var metricName = regexp.MustCompile(`\btorpor_[a-z0-9_]+`)

// TestDashboardMetricsExist: every metric that a panel of the Grafana
// dashboard or an alert rule queries is in the /metrics of a relay with
// --per-agent-metrics and two real agents, one of which woke twice (so
// that its status reports a completed wake), and a rollout.
func TestDashboardMetricsExist(t *testing.T) {
	ro, err := rollouts.OpenBolt(filepath.Join(t.TempDir(), "rollouts.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	r := worldtest.Start(t, relay.Config{Ops: relay.Ops{PerAgentMetrics: true}, Stores: relay.Stores{Rollouts: ro}})
	spec := rollout.Spec{ID: "r1", Target: rollout.Target{Name: "torpor-agent/2", Version: "2"}}
	if _, err := (&rollout.Manager{Store: ro}).Start(context.Background(), spec, []rollout.Device{{ID: "did:key:zDevice"}}); err != nil {
		t.Fatal(err)
	}
	var key0 did.DID
	for i := range 2 {
		key, _ := did.Generate(nil)
		key0 = key.DID()
		dir := t.TempDir()
		runAgent(t, r.URL, key, dir, true)
		if i == 0 {
			runAgent(t, r.URL, key, dir, false) // boots again: its status reports the first wake
		}
	}
	// a request without a token: counted in torpor_relay_enqueues_total{outcome="unauthenticated"}
	if resp, err := http.Post(r.URL+"/a/"+key0.String()+"/a2a/jsonrpc", "application/json", strings.NewReader(`{}`)); err == nil {
		resp.Body.Close()
	}
	scraped := scrape(t, r.URL)
	root, _ := filepath.Abs("../..")
	names := map[string][]string{}
	for _, q := range dashboardQueries(t, filepath.Join(root, "packaging", "grafana", "torpor-fleet.json")) {
		for _, n := range metricName.FindAllString(q, -1) {
			names[n] = append(names[n], "dashboard: "+q)
		}
	}
	for _, q := range ruleQueries(t, filepath.Join(root, "packaging", "prometheus", "torpor-rules.yml")) {
		for _, n := range metricName.FindAllString(q, -1) {
			names[n] = append(names[n], "rule: "+q)
		}
	}
	if len(names) < 10 {
		t.Fatalf("found only %d metric names in the dashboard and the rules: %v", len(names), names)
	}
	for n, where := range names {
		if !scraped[n] {
			t.Errorf("%s is not in the relay's /metrics; queried by %q", n, where)
		}
	}
}

// TestRulesPassPromtool: promtool check rules accepts the alert rules.
func TestRulesPassPromtool(t *testing.T) {
	promtool := testenv.RequireTool(t, "promtool")
	root, _ := filepath.Abs("../..")
	out, err := exec.Command(promtool, "check", "rules", filepath.Join(root, "packaging", "prometheus", "torpor-rules.yml")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// runAgent runs a real hourly_wake agent whose one-second window is
// almost surely closed, until its boot wake published its state (and,
// when untilRecorded, until that wake ended and was recorded).
func runAgent(t *testing.T, url string, key *did.PrivateKey, dir string, untilRecorded bool) {
	t.Helper()
	published, recorded := make(chan struct{}, 1), make(chan struct{}, 1)
	app := deliver.HandlerFunc(func(context.Context, deliver.Delivery) (deliver.Outcome, error) {
		return deliver.Outcome{OK: true}, nil
	})
	a, err := runtime.New(runtime.Config{
		PipelineConfig: runtime.PipelineConfig{Key: key, Purposes: purpose.Set{"comms:*"}, AllowPlaintext: true,
			Routes: []deliver.Route{{Pattern: "*", Name: "app", Handler: app}}},
		Store: runtime.Store{DataDir: dir}, Relay: runtime.Relay{URL: url}, Name: "dash", Board: "qemu-virt", Schedule: runtime.Schedule{Mode: wake.HourlyWake, WindowLength: time.Second},
		Logger: slog.New(slog.DiscardHandler),
		Hooks: runtime.Hooks{
			OnPhase: func(p runtime.Phase) {
				if p.Name == runtime.PhasePublish {
					signal(published)
				}
			},
			OnWake: func(runtime.WakeReport) { signal(recorded) },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("agent: %v", err)
		}
	}
	wait := map[bool]chan struct{}{false: published, true: recorded}[untilRecorded]
	select {
	case <-wait:
	case err := <-done:
		t.Fatalf("agent stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's wake did not get that far within 30 s")
	}
	if untilRecorded {
		stop()
		return
	}
	t.Cleanup(stop)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// scrape returns the names of the relay's metrics, with samples.
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	http.Get(url + "/healthz") // an answer to count in torpor_relay_answers_total
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		out[strings.FieldsFunc(l, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	return out
}

// dashboardQueries returns the expr of every target of every panel.
func dashboardQueries(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var qs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			qs = append(qs, tg.Expr)
		}
	}
	return qs
}

// ruleQueries returns the expr of every rule (one line each).
func ruleQueries(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for _, l := range strings.Split(string(b), "\n") {
		if q, ok := strings.CutPrefix(strings.TrimSpace(l), "expr:"); ok {
			qs = append(qs, strings.TrimSpace(q))
		}
	}
	return qs
}
