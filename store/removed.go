package store

import (
	"errors"
	"os"
)

// ErrRemoved is wrapped by a *RemovedError: a store's file was deleted (or
// its directory removed) while it was open. Writes to it still succeed at
// the system level, into a file no path leads to, so nothing written from
// then on would survive a restart: a store that finds its file removed
// refuses every later write, and the relay answers store_unavailable
// (queued: false) instead of acknowledging into it.
var ErrRemoved = errors.New("store: file removed while in use")

// RemovedError names the removed file.
type RemovedError struct{ Path string }

func (e *RemovedError) Error() string {
	return "store: " + e.Path + " was removed while in use; nothing written to it from now on would survive a restart"
}

func (e *RemovedError) Unwrap() error { return ErrRemoved }

// Fix says what the operator does about a removed store.
const RemovedFix = "stop the relay; restore its data directory from a backup (records acknowledged since are lost), " +
	"or start it once with --reinitialise to begin with empty stores"

// CheckLinked returns a *RemovedError naming path when f, open on the
// file at path, has no link left (its file or its directory was deleted),
// and nil otherwise (also when the system cannot tell).
func CheckLinked(f *os.File, path string) error {
	if f != nil && unlinked(f) {
		return &RemovedError{Path: path}
	}
	return nil
}
