//go:build !linux

package queue

import "os"

// datasync flushes f (fsync; fdatasync where the system has it, see
// logsync_linux.go).
func datasync(f *os.File) error { return f.Sync() }
