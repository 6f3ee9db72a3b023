package session

import (
	"errors"
	"fmt"
	"os"
)

// ErrNotPrivate is returned (wrapped) by CheckPrivate when a state file may
// be read or written by anyone but its owner, or its directory written by
// anyone but its owner.
var ErrNotPrivate = errors.New("state file not private")

// CheckPrivate returns an error wrapping ErrNotPrivate when the bbolt file
// at path, which holds session state and KeyPackage private keys, is not
// its owner's only. Draft-chapman-a2a-mls-03 Section 6.4 asks for the
// protection of the agent's private keys; store.Open creates files with
// mode 0600 in 0700 directories, and this check catches a file or directory
// someone loosened since.
//
// The file must have no group or other bits. Its directory must not be
// writable by group or others, who could replace or rename the file; it
// may be readable by a group, since a listing shows names, not secrets
// (the packaged agent's state directory is StateDirectoryMode=0750).
func CheckPrivate(path string) error {
	for _, c := range []struct {
		path string
		mask os.FileMode
		fix  string
	}{
		{path, 0o077, "chmod 0600"},
		{dirOf(path), 0o022, "chmod go-w"},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			return fmt.Errorf("session: %w", err)
		}
		if m := fi.Mode().Perm(); m&c.mask != 0 {
			return fmt.Errorf("session: %w: %s has mode %04o; it holds MLS private state, so it must be its owner's only (%s %s)",
				ErrNotPrivate, c.path, m, c.fix, c.path)
		}
	}
	return nil
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if os.IsPathSeparator(path[i]) {
			if i == 0 {
				return path[:1]
			}
			return path[:i]
		}
	}
	return "."
}
