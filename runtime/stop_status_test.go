package runtime_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/internal/version"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/wake"
)

// TestStopWhileAsleepPublishesStopped: an agent stopped (SIGTERM) while
// it sleeps connects once more to publish status stopped, so its retained
// status no longer announces a wake it will not make. Every status
// carries the agent's version.
func TestStopWhileAsleepPublishesStopped(t *testing.T) {
	w := newCmdWorld(t, wake.HourlyWake)
	w.Run()
	w.NextWake()
	st := w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAsleep })
	if st.Version != version.Get().Short() || st.Version == "" {
		t.Errorf("status version %q, want %q", st.Version, version.Get().Short())
	}
	w.Stop()
	err := <-w.Done
	w.Done <- err // for the cleanup
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	st = w.AwaitStatus(func(s envelope.Status) bool { return s.State != envelope.StateAsleep })
	if st.State != envelope.StateStopped || st.NextWake != nil {
		t.Errorf("status after a stop while asleep = %+v, want stopped with no next wake", st)
	}
}

// TestStatusReplyInsideWindow: the status command's result names the
// device, its state awake since the connection came up (not
// 0001-01-01), its version, and uses the documented schema: lowerCamel
// members, durations in milliseconds.
func TestStatusReplyInsideWindow(t *testing.T) {
	w := newCmdWorld(t, wake.AlwaysOn)
	w.Run()
	w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAwake })
	r := w.Command(command.OpStatus, nil)
	var res struct {
		Status   envelope.Status            `json:"status"`
		LastWake map[string]json.RawMessage `json:"lastWake"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatalf("status result %s: %v", r.Result, err)
	}
	st := res.Status
	if st.State != envelope.StateAwake || st.Since.IsZero() || st.Name != "pi-7" || st.Device != w.Key.DID().String() || st.Version == "" {
		t.Errorf("status = %+v, want awake since the connection, named, with a version", st)
	}
	if _, ok := res.LastWake["awakeMs"]; res.LastWake != nil && (!ok || res.LastWake["awake"] != nil) {
		t.Errorf("lastWake = %s, want awakeMs (milliseconds) and no nanosecond duration", r.Result)
	}
	if strings.Contains(string(r.Result), `"ID"`) || strings.Contains(string(r.Result), `"Halted"`) {
		t.Errorf("result has Go field names: %s", r.Result)
	}
}
