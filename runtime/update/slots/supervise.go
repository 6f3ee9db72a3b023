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
// with: the child's, or 1 after a kill.
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
			return s.ended(p, cmd, err, killed)
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
// status.
func (s *Slots) ended(p Plan, cmd *exec.Cmd, err error, killed bool) (int, error) {
	if killed {
		return 1, s.Fail(p.Slot, fmt.Sprintf("no proof within %v: killed", p.Deadline))
	}
	code := cmd.ProcessState.ExitCode()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 1, errors.Join(err, s.Fail(p.Slot, err.Error()))
	}
	if code != 0 {
		why := fmt.Sprintf("exited with status %d", code)
		if code < 0 {
			why = cmd.ProcessState.String()
			code = 1
		}
		return code, s.Fail(p.Slot, why)
	}
	return 0, nil
}
