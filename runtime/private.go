package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNotPrivate is returned (wrapped) by Run when the agent's bbolt file
// may be read by anyone but its owner, or its directory written by anyone
// but its owner.
var ErrNotPrivate = errors.New("runtime: store not private")

// checkPrivate refuses a store file that others may read or write: it
// holds the MLS sessions' private state and the unused KeyPackages'
// private keys (draft-chapman-a2a-mls-03 Section 6.4 asks for their
// protection), the replay cache and the idempotency ledger. store.Open
// creates it 0600 in a 0700 directory; this catches a file or directory
// someone loosened since.
//
// The file is held to session.CheckPrivate's rule (no group or other
// bits). The directory is held to a weaker one than CheckPrivate's: it
// must not be writable by group or others, who could then replace or
// rename the file, but it may be readable by the agent's group, since the
// packaged state directory is StateDirectoryMode=0750
// (packaging/systemd/torpor-agent.service); listing it shows names, not
// secrets.
func checkPrivate(path string) error {
	for _, c := range []struct {
		path string
		mask os.FileMode
		fix  string
	}{
		{path, 0o077, "chmod 0600"},
		{filepath.Dir(path), 0o022, "chmod go-w"},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		if m := fi.Mode().Perm(); m&c.mask != 0 {
			return fmt.Errorf("%w: %s has mode %04o; the agent's store holds its MLS private state, so it must be its owner's only (%s %s)",
				ErrNotPrivate, c.path, m, c.fix, c.path)
		}
	}
	return nil
}
