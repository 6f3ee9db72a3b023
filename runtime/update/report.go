package update

import (
	"errors"
	"unicode/utf8"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Status is what the signed status says of a check's result and error
// (Check's): a verified target, nothing newer, or the refusal's code and
// sentence, cut to wire.MaxStatusUpdateDetail bytes.
func Status(res Result, err error) *wire.StatusUpdate {
	s := &wire.StatusUpdate{Target: res.Target, Version: res.Custom.Version, Bytes: res.Bytes}
	var r *Refusal
	switch {
	case err == nil && res.Path != "":
		s.Outcome = wire.UpdateVerified
	case err == nil:
		s.Outcome = wire.UpdateUpToDate
	case errors.As(err, &r):
		s.Outcome, s.Reason, s.Detail = wire.UpdateRefused, string(r.Code), cut(r.Error())
	default:
		s.Outcome, s.Reason, s.Detail = wire.UpdateRefused, string(Invalid), cut(err.Error())
	}
	return s
}

func cut(s string) string {
	if len(s) <= wire.MaxStatusUpdateDetail {
		return s
	}
	s = s[:wire.MaxStatusUpdateDetail]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
