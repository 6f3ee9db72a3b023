package recordlog

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// datasync flushes f's data and the metadata needed to read it back
// (fdatasync(2)): a segment's appended bytes and its new length.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// Lock takes an exclusive flock(2) on dir/LOCK, so that a second process
// opening the same log fails instead of writing beside the first. The lock
// goes with the returned file (closed by its user, or by the process's
// end).
func Lock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("recordlog: locking %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("recordlog: %s is in use by another process: %w", dir, err)
	}
	return f, nil
}
