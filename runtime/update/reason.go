package update

import (
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/runtime/update/tuf"
)

// Code names why a check installs nothing. The codes travel in the signed
// status (transport/link/wire StatusUpdate.Reason) and are stable.
type Code string

// The reasons Check gives.
const (
	// Expired: the timestamp (or snapshot, targets, root) has expired by
	// the device's trusted time, and the relay had nothing fresher in
	// this wake.
	Expired Code = "expired"
	// NoTime: the device has no trusted time to judge expiry by.
	NoTime Code = "no-trusted-time"
	// Freeze: the relay served metadata older than what the device
	// already trusts (a replay, TUF specification Section 5.4.3).
	Freeze Code = "freeze"
	// MixAndMatch: a role's metadata is not the one the snapshot or the
	// timestamp names (version, length or hashes; Sections 5.5.2, 5.6.2).
	MixAndMatch Code = "mix-and-match"
	// Signature: a signature does not verify or a role's threshold is
	// not met (Sections 5.3.4, 5.4.2, 5.5.3, 5.6.3).
	Signature Code = "signature"
	// Rollback: the newest target for this device is older than the
	// installed version.
	Rollback Code = "rollback"
	// EndlessData: the relay sent more bytes than the target's length
	// (Section 5.7.3 bounds the download by it).
	EndlessData Code = "endless-data"
	// BadTarget: the downloaded file's length or hashes are not the
	// target's.
	BadTarget Code = "bad-target"
	// Hardware: the repository has targets, none for this device's board
	// and architecture.
	Hardware Code = "wrong-hardware"
	// Window: the target's install window is closed at this time.
	Window Code = "outside-window"
	// Confirm: the target needs the owner's confirmation, not yet given:
	// the reason of a held outcome (wire.UpdateHeld), not a refusal.
	Confirm Code = "needs-confirmation"
	// Supply: the supply is below the target's minimum.
	Supply Code = "low-supply"
	// Budget: this wake's byte budget is spent; the download resumes at
	// the next wake.
	Budget Code = "budget"
	// NoSpace: the flash has less free space than the rest of the
	// target needs.
	NoSpace Code = "no-space"
	// Fetch: the link failed while fetching.
	Fetch Code = "fetch"
	// Offered: the target a rollout offered is not one the owner signed,
	// or the signed one has another version or SHA-256 than the offer.
	Offered Code = "not-offered"
	// Install: the verified build could not be installed (no A/B slots,
	// or installing it failed).
	Install Code = "install"
	// Trial: the verified build is not installed yet because the build
	// running is on trial (one install at a time, runtime/update/slots):
	// the reason of a waiting outcome (wire.UpdateWaiting), not a
	// refusal. It is installed once the trial ended.
	Trial Code = "trial"
	// Invalid: malformed metadata or custom fields, or a local failure.
	Invalid Code = "invalid"
)

// Refusal is why a check installs nothing: a Code and a sentence.
type Refusal struct {
	Code   Code
	Detail string
	Err    error
}

func (r *Refusal) Error() string { return string(r.Code) + ": " + r.Detail }

func (r *Refusal) Unwrap() error { return r.Err }

func refuse(c Code, err error, format string, args ...any) *Refusal {
	d := fmt.Sprintf(format, args...)
	if err != nil {
		d += ": " + err.Error()
	}
	return &Refusal{Code: c, Detail: d, Err: err}
}

// classify turns an error package tuf returned while loading role into a
// refusal. A version error is a freeze when versionIsFreeze (a version
// below the trusted one); otherwise, like a length or hash that is not
// what the role above names, a mix-and-match.
func classify(role string, err error, versionIsFreeze bool) *Refusal {
	var (
		already *Refusal
		fetch   *fetchError
	)
	switch {
	case errors.As(err, &already):
		return already
	case errors.As(err, &fetch):
		return refuse(Fetch, err, "fetching %s", role)
	case errors.Is(err, tuf.ErrUnsigned):
		return refuse(Signature, err, "%s", role)
	case errors.Is(err, tuf.ErrExpired):
		return refuse(Expired, err, "%s", role)
	case errors.Is(err, tuf.ErrLengthOrHash):
		return refuse(MixAndMatch, err, "%s is not the one the role above names", role)
	case errors.Is(err, tuf.ErrVersion) && versionIsFreeze:
		return refuse(Freeze, err, "%s is older than the trusted one", role)
	case errors.Is(err, tuf.ErrVersion):
		return refuse(MixAndMatch, err, "%s is not the version the role above names", role)
	}
	return refuse(Invalid, err, "%s", role)
}

// fetchError marks an error of the Source (the link), as opposed to one of
// the metadata it returned.
type fetchError struct{ err error }

func (e *fetchError) Error() string { return e.err.Error() }

func (e *fetchError) Unwrap() error { return e.err }
