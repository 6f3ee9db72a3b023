//go:build unix

package relay

import "syscall"

// openFileLimit returns the process's soft limit of open files
// (RLIMIT_NOFILE, which the Go runtime raises to the hard limit at
// start), or 0 when it cannot be read.
func openFileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}
