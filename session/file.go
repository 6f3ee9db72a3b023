package session

import (
	"fmt"
	"os"
)

// CheckPrivate returns an error when the file at path — a bbolt file that
// holds session state and KeyPackage private keys — or its directory may be
// read or written by anyone but its owner. Draft-chapman-a2a-mls-03
// Section 6.4 asks for the protection of the agent's private key; store.Open
// creates files with mode 0600 in 0700 directories, and this check catches
// a file or directory someone loosened since.
func CheckPrivate(path string) error {
	for _, p := range []string{path, dirOf(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("session: %w", err)
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			return fmt.Errorf("session: %s has mode %04o: session state must be accessible to its owner only (chmod go-rwx)", p, m)
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
