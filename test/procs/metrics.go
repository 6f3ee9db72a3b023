package procs

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// QueueDepths reads the relay's per-agent queue gauge
// (torpor_relay_agent_queue_messages{agent="did:…"}, served with
// --per-agent-metrics) from its /metrics page, as an operator's scraper
// would. The result maps agent DID to queued messages.
func QueueDepths(ctx context.Context, hc *http.Client, relayURL string) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(relayURL, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("procs: /metrics: HTTP %d", resp.StatusCode)
	}
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if id, v, ok := parseGauge(sc.Text(), "torpor_relay_agent_queue_messages", "agent"); ok {
			out[id] = int(v)
		}
	}
	return out, sc.Err()
}

// parseGauge reads one sample line of the Prometheus text format,
// `name{label="value",…} number`, and returns the named label's value and
// the number.
func parseGauge(line, name, label string) (string, float64, bool) {
	rest, ok := strings.CutPrefix(line, name+"{")
	if !ok {
		return "", 0, false
	}
	labels, num, ok := strings.Cut(rest, "} ")
	if !ok {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(strings.Fields(num)[0], 64)
	if err != nil {
		return "", 0, false
	}
	for _, kv := range strings.Split(labels, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if ok && k == label {
			if s, err := strconv.Unquote(val); err == nil {
				return s, v, true
			}
		}
	}
	return "", 0, false
}
