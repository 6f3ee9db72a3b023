package slots

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Supervise runs cmd, the binary of p's slot on trial, and watches it: if
// the slot is still on trial when p.Deadline has passed, the child hangs
// or cannot prove itself, and is killed; if it ends unconfirmed with a
// failure status, that is recorded. Either way the start is used up. When
// ctx ends (the launcher was told to stop) the child gets SIGTERM and the
// launcher waits for it. Supervise returns the status the launcher exits
// with: the child's once it confirmed, 1 before.
func (s *Slots) Supervise(ctx context.Context, cmd *exec.Cmd, p Plan) (int, error) {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, EnvSlot+"="+p.Slot)
	if err := cmd.Start(); err != nil {
		return 1, errors.Join(err, s.Fail(p.Slot, "did not start: "+err.Error()))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := s.Clock.NewTimer(p.Deadline)
	defer t.Stop()
	stop, killed := ctx.Done(), false
	for {
		select {
		case err := <-done:
			return s.ended(p, cmd, err, killed, stop == nil)
		case <-stop:
			stop = nil
			cmd.Process.Signal(syscall.SIGTERM)
		case <-t.C():
			if s.OnTrial(p.Slot) {
				killed = true
				cmd.Process.Kill()
			}
		}
	}
}

// ended records how the child of p ended and returns the launcher's exit
// status: 1 for any end of an unconfirmed child, so that no status the
// unit will not restart on (RestartPreventExitStatus=65) leaves a build
// on trial. A child that exits cleanly unconfirmed although nobody stopped
// it fails too (status 1), so that the unit's Restart=on-failure starts
// the launcher again.
func (s *Slots) ended(p Plan, cmd *exec.Cmd, err error, killed, stopped bool) (int, error) {
	if killed {
		return 1, s.Fail(p.Slot, fmt.Sprintf("no proof within %v: killed", p.Deadline))
	}
	code := cmd.ProcessState.ExitCode()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 1, errors.Join(err, s.Fail(p.Slot, err.Error()))
	}
	if code != 0 && !s.OnTrial(p.Slot) {
		return max(code, 1), nil // it proved itself first
	}
	if code != 0 {
		why := fmt.Sprintf("exited with status %d", code)
		if code < 0 {
			why = cmd.ProcessState.String()
		}
		return 1, s.Fail(p.Slot, why)
	}
	if !stopped && s.OnTrial(p.Slot) {
		return 1, s.Fail(p.Slot, "exited with status 0 before it proved itself")
	}
	return 0, nil
}
