//go:build unix

package store

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only, for reading many
// pages without a system call each; unmap releases it.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), err error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, syscall.EINVAL
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { syscall.Munmap(data) }, nil
}
