package update

import (
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Status is what the signed status says of a check's result and error
// (Check's): a verified target, one held for the owner's confirmation
// (outcome held, reason needs-confirmation), one whose install waits for
// the running build's trial (outcome waiting, reason trial: a Refusal
// with Code Trial), nothing newer, or the refusal's code and
// sentence, cut to wire.MaxStatusUpdateDetail bytes (the target's name
// to wire.MaxStatusUpdateTarget), with every control or invisible
// character shown as its code point (safetext.Clip): the relay refuses a
// status that carries one.
func Status(res Result, err error) *wire.StatusUpdate {
	s := &wire.StatusUpdate{Target: safetext.Clip(res.Target, wire.MaxStatusUpdateTarget), Version: res.Custom.Version, Bytes: res.Bytes}
	var r *Refusal
	switch {
	case err == nil && res.Path != "" && res.AwaitsConfirmation:
		s.Outcome, s.Reason = wire.UpdateHeld, string(Confirm)
		s.Detail = safetext.Clip(fmt.Sprintf("%s version %d waits for the owner's confirmation", res.Target, res.Custom.Version), wire.MaxStatusUpdateDetail)
	case err == nil && res.Path != "":
		s.Outcome = wire.UpdateVerified
	case err == nil:
		s.Outcome = wire.UpdateUpToDate
	case errors.As(err, &r) && r.Code == Trial:
		s.Outcome, s.Reason, s.Detail = wire.UpdateWaiting, string(Trial), safetext.Clip(r.Detail, wire.MaxStatusUpdateDetail)
	case errors.As(err, &r):
		s.Outcome, s.Reason, s.Detail = wire.UpdateRefused, string(r.Code), safetext.Clip(r.Error(), wire.MaxStatusUpdateDetail)
	default:
		s.Outcome, s.Reason, s.Detail = wire.UpdateRefused, string(Invalid), safetext.Clip(err.Error(), wire.MaxStatusUpdateDetail)
	}
	return s
}
