// Package atomicfile writes small files so that a power cut leaves either
// the old contents or the new ones, never a torn mix.
package atomicfile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
)

// WriteFile writes data to path through a synced temporary file in the same
// directory and a rename, then syncs the directory so the rename itself is
// durable. The file gets mode perm before any data is written to it.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	return commit(f, path, bytes.NewReader(data))
}

// CopyIn writes what r reads, to its end, to path as WriteFile does, but
// through the temporary file tmp, which it creates (or truncates) with
// mode perm: a caller that names tmp can find and remove what a power cut
// left of it. tmp must be in path's directory.
func CopyIn(tmp, path string, r io.Reader, perm os.FileMode) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	return commit(f, path, r)
}

// commit copies r into the temporary file f, syncs and closes it, renames
// it to path and syncs path's directory. f is removed on any error.
func commit(f *os.File, path string, r io.Reader) error {
	defer os.Remove(f.Name()) // no-op after a successful rename
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
