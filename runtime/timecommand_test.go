package runtime_test

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/runtime/trusted"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/wake"
)

// TestOwnerSetsTheTimeFloor: the owner's signed time command replaces the
// trusted time's floor (kept in agent.db); an operator who is not the
// owner is refused.
func TestOwnerSetsTheTimeFloor(t *testing.T) {
	floor := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, owner := range []bool{true, false} {
		var dataDir string
		w := newCmdWorldWith(t, wake.AlwaysOn, func(w *cmdWorld, cfg *runtime.Config, _ *manage.CommandsConfig) {
			cfg.TrustedTime = &trusted.Config{Kernel: unsynced{}}
			cfg.Owner = runtimetest.Key(t, 11).DID()
			if owner {
				cfg.Owner = w.OpKey.DID()
			}
			dataDir = cfg.Store.DataDir
		})
		w.Run()
		w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAwake })
		r := w.Command(command.OpTime, &command.TimeArgs{Floor: floor})
		if !owner {
			if r.Outcome != command.OutcomeFailed || r.Reason != command.ReasonOperatorNotAllowed {
				t.Errorf("time from an operator who is not the owner: %+v, want failed %s", r, command.ReasonOperatorNotAllowed)
			}
			continue
		}
		if r.Outcome != command.OutcomeOK || string(r.Result) != `{"floor":"2100-01-01T00:00:00Z"}` {
			t.Fatalf("time from the owner: %+v", r)
		}
		w.Stop()
		err := <-w.Done
		w.Done <- err // for the world's cleanup
		db, err := bolt.Open(filepath.Join(dataDir, runtime.DBFile), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := trusted.Open(db, trusted.Config{Kernel: unsynced{}})
		if err != nil {
			t.Fatal(err)
		}
		if rd, _ := c.Establish(); !rd.Floor.Equal(floor) {
			t.Errorf("floor kept %v, want the owner's %v", rd.Floor, floor)
		}
		db.Close()
	}
}
