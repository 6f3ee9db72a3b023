package queue

import (
	"os"
	"syscall"
)

// datasync flushes f's data and the metadata needed to read it back
// (fdatasync(2)): a segment's appended bytes and its new length.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
