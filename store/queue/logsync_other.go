//go:build !linux

package queue

import (
	"os"
	"path/filepath"
)

// datasync flushes f (fsync; fdatasync where the system has it, see
// logsync_linux.go).
func datasync(f *os.File) error { return f.Sync() }

// lockDir opens dir/LOCK without locking it: the relay's record log is
// locked on Linux only (logsync_linux.go).
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
}
