package update

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Status is what the signed status says of a check's result and error
// (Check's): a verified target, one held for the owner's confirmation
// (outcome held, reason needs-confirmation), nothing newer, or the refusal's code and
// sentence, cut to wire.MaxStatusUpdateDetail bytes (the target's name
// to wire.MaxStatusUpdateTarget).
func Status(res Result, err error) *wire.StatusUpdate {
	s := &wire.StatusUpdate{Target: cut(res.Target, wire.MaxStatusUpdateTarget), Version: res.Custom.Version, Bytes: res.Bytes}
	var r *Refusal
	switch {
	case err == nil && res.Path != "" && res.AwaitsConfirmation:
		s.Outcome, s.Reason = wire.UpdateHeld, string(Confirm)
		s.Detail = cut(fmt.Sprintf("%s version %d waits for the owner's confirmation", res.Target, res.Custom.Version), wire.MaxStatusUpdateDetail)
	case err == nil && res.Path != "":
		s.Outcome = wire.UpdateVerified
	case err == nil:
		s.Outcome = wire.UpdateUpToDate
	case errors.As(err, &r):
		s.Outcome, s.Reason, s.Detail = wire.UpdateRefused, string(r.Code), cut(r.Error(), wire.MaxStatusUpdateDetail)
	default:
		s.Outcome, s.Reason, s.Detail = wire.UpdateRefused, string(Invalid), cut(err.Error(), wire.MaxStatusUpdateDetail)
	}
	return s
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
