//go:build unix

package store

import (
	"os"
	"syscall"
)

// unlinked reports whether f's file has no directory entry left (fstat's
// st_nlink is 0).
func unlinked(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}
