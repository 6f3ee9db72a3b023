package slots

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
)

// cut is the panic of a faultFS when the power goes.
type cut struct{}

// faultFS is the real file layer with the power cut before its cutAt-th
// step (1-based; 0 never cuts). Each atomic write is four steps: the
// temporary file written, synced, renamed, its directory synced. At the
// cut, what was not synced is lost as a power cut loses it: a file written
// and not synced keeps half its bytes, a rename whose directory was not
// synced is undone (or, with keepRenames, kept: the file system may have
// written the directory anyway). Directories made are taken as durable.
type faultFS struct {
	osFS
	step, cutAt int
	keepRenames bool
	undo        map[string]func() // by "file:PATH" or "dir:DIR"
	order       []string
}

func newFaultFS(cutAt int, keepRenames bool) *faultFS {
	return &faultFS{cutAt: cutAt, keepRenames: keepRenames, undo: map[string]func(){}}
}

func (f *faultFS) tick() {
	f.step++
	if f.step != f.cutAt {
		return
	}
	for i := len(f.order) - 1; i >= 0; i-- {
		if u, ok := f.undo[f.order[i]]; ok {
			u()
			delete(f.undo, f.order[i])
		}
	}
	panic(cut{})
}

func (f *faultFS) later(key string, u func()) {
	if prev, ok := f.undo[key]; ok {
		u0 := u
		u = func() { u0(); prev() }
	} else {
		f.order = append(f.order, key)
	}
	f.undo[key] = u
}

func (f *faultFS) WriteAtomic(path string, data []byte, perm os.FileMode) error {
	return f.CopyIn(path+".tmp-fault", path, bytes.NewReader(data), perm)
}

func (f *faultFS) CopyIn(tmp, path string, r io.Reader, perm os.FileMode) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	f.tick()
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	f.later("file:"+tmp, func() { os.Truncate(tmp, int64(len(data)/2)) })
	f.tick()
	delete(f.undo, "file:"+tmp) // fsync(2)
	f.tick()
	old, had := os.ReadFile(path)
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if f.keepRenames {
		f.tick()
		return nil
	}
	f.later("dir:"+dir, func() {
		os.Rename(path, tmp)
		if had == nil {
			os.WriteFile(path, old, perm)
		}
	})
	f.tick()
	delete(f.undo, "dir:"+dir) // fsync(2) of the directory
	return nil
}

func (f *faultFS) Remove(path string) error {
	f.tick()
	return os.Remove(path)
}
