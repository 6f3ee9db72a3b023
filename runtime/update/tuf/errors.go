package tuf

import (
	"errors"
	"fmt"
)

// The classes of refusal. Every error of this package wraps one of them.
var (
	// ErrUnsigned is returned when fewer of a role's keys than its
	// threshold signed the metadata (Sections 5.3.4, 5.3.5, 5.4.2,
	// 5.5.3, 5.6.3).
	ErrUnsigned = errors.New("tuf: not signed by the role's threshold of keys")
	// ErrExpired is returned when metadata has expired by the reference
	// time (Sections 5.3.10, 5.4.4, 5.5.6, 5.6.5).
	ErrExpired = errors.New("tuf: expired")
	// ErrVersion is returned for a version that is not the one
	// expected: a rollback below the trusted one (Sections 5.3.5,
	// 5.4.3, 5.5.5) or not the version the role above names (5.5.4,
	// 5.6.4).
	ErrVersion = errors.New("tuf: bad version")
	// ErrEqualVersion is returned by UpdateTimestamp for a timestamp of
	// the trusted one's version: the trusted one stays (Section
	// 5.4.3.2).
	ErrEqualVersion = errors.New("tuf: the version of the trusted one")
	// ErrLengthOrHash is returned when bytes have another length or
	// hashes than the metadata naming them (Sections 5.5.2, 5.6.2,
	// 5.7.3).
	ErrLengthOrHash = errors.New("tuf: length or hashes do not match")
	// ErrInvalid is returned for metadata that is malformed, of the
	// wrong role, or that names keys or roles this package cannot use.
	ErrInvalid = errors.New("tuf: invalid metadata")
	// ErrOrder is returned for an update out of the order of Section 5
	// (a root after the timestamp, a snapshot before it, ...).
	ErrOrder = errors.New("tuf: out of order")
)

// errorf returns an error wrapping class, with a sentence after it.
func errorf(class error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{class}, args...)...)
}
