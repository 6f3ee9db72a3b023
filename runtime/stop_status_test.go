package runtime_test

import (
	"testing"

	"github.com/torpor-dev/torpor/internal/version"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/wake"
)

// TestStopWhileAsleepPublishesStopped: an agent stopped (SIGTERM) while
// it sleeps connects once more to publish status stopped, so its retained
// status no longer announces a wake it will not make. Every status
// carries the agent's version.
func TestStopWhileAsleepPublishesStopped(t *testing.T) {
	w := newCmdWorld(t, wake.HourlyWake)
	w.run()
	w.nextWake()
	st := w.awaitStatus(func(s mqtt.Status) bool { return s.State == mqtt.StateAsleep })
	if st.Version != version.Get().Short() || st.Version == "" {
		t.Errorf("status version %q, want %q", st.Version, version.Get().Short())
	}
	w.stop()
	err := <-w.done
	w.done <- err // for the cleanup
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	st = w.awaitStatus(func(s mqtt.Status) bool { return s.State != mqtt.StateAsleep })
	if st.State != mqtt.StateStopped || st.NextWake != nil {
		t.Errorf("status after a stop while asleep = %+v, want stopped with no next wake", st)
	}
}
