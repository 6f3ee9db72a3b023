// Package managetest has test helpers for runtime/manage: a recording
// Device (test/worldtest's Session runs one on a broker).
package managetest

import (
	"context"
	"sync"

	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// Device is a recording manage.Device: it records every command it executes
// and answers with Result (or ok). It is safe for concurrent use.
type Device struct {
	// Result, when set, decides the answer to a command.
	Result func(ctx context.Context, c manage.Command) manage.Result
	// State is what Status reports.
	State envelope.Status

	mu sync.Mutex
	// mu guards all following fields.
	executed []manage.Command
	notify   chan struct{}
}

// Execute implements manage.Device.
func (d *Device) Execute(ctx context.Context, c manage.Command) manage.Result {
	d.mu.Lock()
	d.executed = append(d.executed, c)
	d.wakeLocked()
	d.mu.Unlock()
	if d.Result != nil {
		return d.Result(ctx, c)
	}
	return manage.OK(map[string]any{"op": c.Op})
}

// Status implements mqtt.StatusReporter.
func (d *Device) Status() envelope.Status { return d.State }

// Executed returns the commands executed so far, in order.
func (d *Device) Executed() []manage.Command {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]manage.Command(nil), d.executed...)
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
func (d *Device) WaitExecuted(ctx context.Context, n int) ([]manage.Command, error) {
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
