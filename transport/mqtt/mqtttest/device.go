package mqtttest

import (
	"context"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/store/replay"
	"github.com/torpor-dev/torpor/transport/mqtt"
)

// Device is a recording mqtt.Device: it records every command it executes
// and answers with Result (or ok). It is safe for concurrent use.
type Device struct {
	// Result, when set, decides the answer to a command.
	Result func(ctx context.Context, c mqtt.Command) mqtt.Result
	// State is what Status reports.
	State mqtt.Status

	mu sync.Mutex
	// mu guards all following fields.
	executed []mqtt.Command
	notify   chan struct{}
}

// Execute implements mqtt.Device.
func (d *Device) Execute(ctx context.Context, c mqtt.Command) mqtt.Result {
	d.mu.Lock()
	d.executed = append(d.executed, c)
	d.wakeLocked()
	d.mu.Unlock()
	if d.Result != nil {
		return d.Result(ctx, c)
	}
	return mqtt.OK(map[string]any{"op": c.Op})
}

// Status implements mqtt.StatusReporter.
func (d *Device) Status() mqtt.Status { return d.State }

// Executed returns the commands executed so far, in order.
func (d *Device) Executed() []mqtt.Command {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]mqtt.Command(nil), d.executed...)
}

// Changed returns a channel closed at the next Execute.
func (d *Device) Changed() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.notify == nil {
		d.notify = make(chan struct{})
	}
	return d.notify
}

func (d *Device) wakeLocked() {
	if d.notify != nil {
		close(d.notify)
		d.notify = nil
	}
}

// WaitExecuted waits until n commands were executed or ctx ends, and
// returns what was executed.
func (d *Device) WaitExecuted(ctx context.Context, n int) ([]mqtt.Command, error) {
	for {
		ch := d.Changed()
		if got := d.Executed(); len(got) >= n {
			return got, nil
		}
		select {
		case <-ctx.Done():
			return d.Executed(), ctx.Err()
		case <-ch:
		}
	}
}

// State is a device's bbolt file with the replay cache and the ledger
// opened in it, as the agent has them.
type State struct {
	Path   string
	DB     *bolt.DB
	Replay *replay.Cache
	Ledger *ledger.Ledger
}

// OpenState opens (creating) the device state at path. Each open is a new
// incarnation of the ledger, as after a reboot. It is closed at the end of
// the test unless closed before.
func OpenState(t testing.TB, path string, c clock.Clock) *State {
	t.Helper()
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rc, err := replay.Open(db, &replay.Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(db, &ledger.Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	return &State{Path: path, DB: db, Replay: rc, Ledger: l}
}

// Close closes the bbolt file.
func (s *State) Close() error { return s.DB.Close() }
