//go:build integration

package browser

import (
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/health"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// scale is the compressed clock's speed: an hour passes in 3 minutes.
const scale = 20

// grace is the relay's --overdue-grace (on the compressed clock).
const grace = time.Minute

// world is a relay with a console and the agents linked to it.
type world struct {
	relay *worldtest.Relay
	clk   clock.Clock
	op    *did.PrivateKey
}

func newWorld(t *testing.T) *world {
	t.Helper()
	clk, err := clock.NewScaled(nil, scale)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{clk: clk}
	w.op, _ = did.Generate(nil)
	st, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w.relay = worldtest.Start(t, relay.Config{Clock: clk, Stores: relay.Stores{Audit: st}, Ops: relay.Ops{Console: &relay.ConsoleConfig{
		Operators: []string{w.op.DID().String()}, Secret: make([]byte, 32), OverdueGrace: grace, Refresh: 300 * time.Millisecond}}})
	return w
}

// agent is one real agent (package runtime) on the world's clock.
type agent struct {
	*runtime.Agent
	key  *did.PrivateKey
	stop func()
}

// startAgent runs an agent named name in mode and returns once its first
// wake published its state. An hourly window is put half an hour away,
// so that it does not open during the test.
func (w *world) startAgent(t *testing.T, name string, mode wake.Mode, scheduled time.Time) *agent {
	t.Helper()
	key, _ := did.Generate(nil)
	now := w.clk.Now()
	off := time.Duration((now.Minute()+30-wake.WakeMinute(key.DID().String())+120)%60) * time.Minute
	dir := t.TempDir()
	a, stop := worldtest.RunPublished(t, runtime.Config{
		PipelineConfig: runtime.PipelineConfig{Key: key, Purposes: purpose.Set{"comms:*"}, AllowPlaintext: true, Clock: w.clk,
			Routes: []deliver.Route{{Pattern: "*", Name: "app", Handler: &deliver.Recorder{}}}},
		Store: runtime.Store{DataDir: dir}, Relay: runtime.Relay{URL: w.relay.URL}, Name: name, Board: "rpi4",
		// This machine's own uptime and the data directory's file system,
		// read as a device reads them.
		Status:   runtime.StatusSources{Health: health.Sources{Root: "/", DataDir: dir}.Read},
		Schedule: runtime.Schedule{Mode: mode, ScheduledWake: scheduled, WindowLength: 5 * time.Minute, WindowOffset: off},
		Logger:   slog.New(slog.DiscardHandler),
	})
	return &agent{Agent: a, key: key, stop: stop}
}

// send posts a signed message from sender to agent through the relay, as
// any A2A sender does, and returns the HTTP status (503 and queued while
// the agent sleeps).
func (w *world) send(t *testing.T, sender *did.PrivateKey, agent did.DID) int {
	t.Helper()
	now := w.clk.Now()
	body := runtimetest.Body(t, runtimetest.DataPart(t, runtimetest.Object(t, sender, "comms:message", now, 2*time.Hour, map[string]string{"text": "hello"})))
	tok, err := bearer.Issue(sender, w.relay.URL, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	status, _, err := relaytest.Exchange(http.DefaultClient, w.relay.URL+"/a/"+agent.String()+"/a2a/jsonrpc", bearer.Authorization(tok), body)
	if err != nil {
		t.Fatal(err)
	}
	return status
}
