//go:build !linux

package recordlog

import (
	"os"
	"path/filepath"
)

// datasync flushes f (fsync; fdatasync where the system has it, see
// sync_linux.go).
func datasync(f *os.File) error { return f.Sync() }

// Lock opens dir/LOCK without locking it: the record log is locked on
// Linux only (sync_linux.go).
func Lock(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
}
