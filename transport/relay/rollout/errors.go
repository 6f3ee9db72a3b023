package rollout

import "errors"

// Errors of Plan and Start.
var (
	// ErrBadSpec is wrapped by the error of a Spec that cannot be
	// planned: percents not increasing up to 100, a bad criterion, no
	// target, no devices, or too many.
	ErrBadSpec = errors.New("rollout: bad rollout")
	// ErrExists is returned by Start when a rollout has the spec's id.
	ErrExists = errors.New("rollout: a rollout with this id exists")
)

// Errors of Pause, Resume, Abort and Get.
var (
	// ErrNotFound is returned for an id no rollout has.
	ErrNotFound = errors.New("rollout: no such rollout")
	// ErrState is wrapped by the error of a change the rollout's state
	// forbids: resuming one that runs, pausing or resuming one aborted or
	// done.
	ErrState = errors.New("rollout: not in a state that allows this")
)

// Errors of Report.
var (
	// ErrBadOutcome is returned for an outcome other than Installed,
	// RolledBack or Refused.
	ErrBadOutcome = errors.New("rollout: unknown outcome")
)
