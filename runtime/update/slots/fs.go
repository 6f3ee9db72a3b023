package slots

import (
	"io"
	"os"

	"github.com/torpor-dev/torpor/internal/atomicfile"
)

// fsys is the file layer of the slots: the real one in production, a
// fault-injecting one in the tests, which cuts the power between any two
// of its calls and keeps only what was synced.
type fsys interface {
	ReadFile(path string) ([]byte, error)
	// WriteAtomic replaces path with data as internal/atomicfile does.
	WriteAtomic(path string, data []byte, perm os.FileMode) error
	// CopyIn writes r to tmp (made with perm), syncs it, renames it to
	// path and syncs path's directory, as internal/atomicfile's CopyIn
	// does.
	CopyIn(tmp, path string, r io.Reader, perm os.FileMode) error
	MkdirAll(path string, perm os.FileMode) error
	Remove(path string) error
	Open(path string) (io.ReadCloser, error)
}

type osFS struct{}

func (osFS) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

func (osFS) WriteAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteFile(path, data, perm)
}

func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }

func (osFS) Remove(path string) error { return os.Remove(path) }

func (osFS) Open(path string) (io.ReadCloser, error) { return os.Open(path) }

func (osFS) CopyIn(tmp, path string, r io.Reader, perm os.FileMode) error {
	return atomicfile.CopyIn(tmp, path, r, perm)
}
