// Package initramfs writes Linux initramfs archives: the "newc" cpio
// format (Documentation/driver-api/early-userspace/buffer-format.rst)
// compressed with gzip, with nothing but the standard library, so the
// QEMU system tests build their guest's root file system from Go without
// cpio or busybox.
package initramfs

import (
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// Mode bits of the newc header (the S_IF* file types).
const (
	typeDir  = 0o040000
	typeReg  = 0o100000
	typeChar = 0o020000
	typeLink = 0o120000
)

// Writer writes an archive. Parent directories of every entry are created
// (mode 0755) when not added explicitly. Close writes the trailer; the
// underlying writer is not closed.
type Writer struct {
	gz    *gzip.Writer
	ino   uint32
	dirs  map[string]bool
	err   error
	names map[string]bool
}

// NewWriter returns a Writer that writes a gzip-compressed newc archive to w.
func NewWriter(w io.Writer) *Writer {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	return &Writer{gz: gz, ino: 1, dirs: map[string]bool{".": true}, names: map[string]bool{}}
}

// clean returns name relative to the archive root, without a leading "/".
func clean(name string) (string, error) {
	c := strings.TrimPrefix(path.Clean("/"+name), "/")
	if c == "" {
		return "", fmt.Errorf("initramfs: invalid entry name %q", name)
	}
	return c, nil
}

// Dir adds a directory.
func (w *Writer) Dir(name string, perm uint32) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	if w.dirs[c] {
		return nil
	}
	if err := w.parents(c); err != nil {
		return err
	}
	w.dirs[c] = true
	return w.entry(c, typeDir|perm&0o7777, 0, 0, nil)
}

// File adds a regular file with the given permission bits.
func (w *Writer) File(name string, perm uint32, data []byte) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	if err := w.parents(c); err != nil {
		return err
	}
	return w.entry(c, typeReg|perm&0o7777, 0, 0, data)
}

// Symlink adds a symbolic link name pointing at target.
func (w *Writer) Symlink(name, target string) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	if err := w.parents(c); err != nil {
		return err
	}
	return w.entry(c, typeLink|0o777, 0, 0, []byte(target))
}

// CharDev adds a character device node, e.g. dev/console (5, 1).
func (w *Writer) CharDev(name string, perm, major, minor uint32) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	if err := w.parents(c); err != nil {
		return err
	}
	return w.entry(c, typeChar|perm&0o7777, major, minor, nil)
}

func (w *Writer) parents(c string) error {
	var missing []string
	for d := path.Dir(c); !w.dirs[d]; d = path.Dir(d) {
		missing = append(missing, d)
	}
	sort.Strings(missing) // parents sort before their children
	for _, d := range missing {
		w.dirs[d] = true
		if err := w.entry(d, typeDir|0o755, 0, 0, nil); err != nil {
			return err
		}
	}
	return nil
}

// entry writes one header, the name and the data, each padded to 4 bytes.
func (w *Writer) entry(name string, mode, rmajor, rminor uint32, data []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.names[name] {
		w.err = fmt.Errorf("initramfs: duplicate entry %q", name)
		return w.err
	}
	w.names[name] = true
	nlink := uint32(1)
	if mode&0o170000 == typeDir {
		nlink = 2
	}
	w.ino++
	w.err = w.raw(name, w.ino, mode, nlink, rmajor, rminor, data)
	return w.err
}

func (w *Writer) raw(name string, ino, mode, nlink, rmajor, rminor uint32, data []byte) error {
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
	// devminor, rdevmajor, rdevminor, namesize, check: 8 hex digits each.
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rmajor, rminor, len(name)+1, 0)
	if _, err := io.WriteString(w.gz, hdr+name+"\x00"); err != nil {
		return err
	}
	if err := w.pad(len(hdr) + len(name) + 1); err != nil {
		return err
	}
	if _, err := w.gz.Write(data); err != nil {
		return err
	}
	return w.pad(len(data))
}

func (w *Writer) pad(n int) error {
	if r := n % 4; r != 0 {
		_, err := w.gz.Write(make([]byte, 4-r))
		return err
	}
	return nil
}

// Close writes the TRAILER!!! entry and flushes the gzip stream.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if err := w.raw("TRAILER!!!", 0, 0, 1, 0, 0, nil); err != nil {
		return err
	}
	return w.gz.Close()
}
