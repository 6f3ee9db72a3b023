//go:build integration

package hostile

import (
	"regexp"
	"strings"
	"testing"
)

var metricsRE = regexp.MustCompile(`msg="torpor-relay listening" .*metrics=(\S+)`)

// TestMetricsListen: with --metrics-listen the relay serves /metrics on
// that listener only; on the public one it is 404, as any unknown path
// (without the flag it is served publicly, as before: docs/operations.md).
func TestMetricsListen(t *testing.T) {
	r := startRelay(t, "--metrics-listen", "127.0.0.1:0")
	private := r.Wait(t, metricsRE)[1]
	if a := do(t, "GET", r.URL+"/metrics", nil, nil); a.Status != 404 || strings.Contains(string(a.Body), "# HELP") {
		t.Errorf("public /metrics with --metrics-listen: %s, want 404", a)
	}
	a := do(t, "GET", private, nil, nil)
	if a.Status != 200 || !strings.Contains(string(a.Body), "# HELP torpor_") {
		t.Errorf("/metrics on --metrics-listen: %d %.200s, want the metrics", a.Status, a.Body)
	}
	if a := do(t, "GET", strings.TrimSuffix(private, "/metrics")+"/healthz", nil, nil); a.Status != 404 {
		t.Errorf("/healthz on the metrics listener: %s, want 404: it serves /metrics alone", a)
	}
	if a := do(t, "GET", startRelay(t).URL+"/metrics", nil, nil); a.Status != 200 {
		t.Errorf("public /metrics without --metrics-listen: %s, want 200", a)
	}
}
