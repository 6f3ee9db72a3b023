package recordlog

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// importedMarker is written into a log directory imported from another
// store's file until that file has been renamed (see PrepareDir).
const importedMarker = "imported-from-bolt"

// Writer writes whole frames into the segment an import fills, in
// commits of about 1 MiB (each ended by its commit frame).
type Writer struct {
	w   *bufio.Writer
	buf []byte
}

// Write adds frames (whole frames only).
func (w *Writer) Write(frames []byte) (int, error) {
	w.buf = append(w.buf, frames...)
	if len(w.buf) >= 1<<20 {
		return len(frames), w.commit()
	}
	return len(frames), nil
}

// commit writes the frames added since the last commit and their commit
// frame.
func (w *Writer) commit() error {
	if len(w.buf) == 0 {
		return nil
	}
	w.buf = AppendCommit(w.buf, 0)
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// PrepareDir makes dir ready to open. When it does not exist and src
// names an existing file, export writes that file's content as frames into
// segment 1 of a new directory, which is then renamed to dir, and src is
// renamed to src + ".imported". Each step is durable before the next, so
// a crash leaves either no log (the import runs again) or the whole log,
// with a marker present until src is renamed. A file src beside a log
// that was not imported from it is refused: nothing already stored is
// dropped unread.
func PrepareDir(dir, src string, export func(*Writer) error) error {
	_, err := os.Stat(dir)
	switch {
	case err == nil:
		return finishImport(dir, src)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("recordlog: %w", err)
	}
	if src != "" {
		if _, err := os.Stat(src); err == nil {
			if err := importInto(dir, src, export); err != nil {
				return fmt.Errorf("recordlog: importing %s into %s: %w", src, dir, err)
			}
			return finishImport(dir, src)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("recordlog: %w", err)
	}
	return SyncDir(filepath.Dir(dir))
}

// finishImport renames an imported file, if it is still there, and
// removes the marker.
func finishImport(dir, src string) error {
	marker := filepath.Join(dir, importedMarker)
	_, merr := os.Stat(marker)
	if src != "" {
		if _, err := os.Stat(src); err == nil {
			if merr != nil {
				return fmt.Errorf("recordlog: %s and the record log %s both exist and the log was not imported from it; move one of them away", src, dir)
			}
			if err := os.Rename(src, src+".imported"); err != nil {
				return fmt.Errorf("recordlog: %w", err)
			}
			if err := SyncDir(filepath.Dir(src)); err != nil {
				return err
			}
		}
	}
	if merr == nil {
		if err := os.Remove(marker); err != nil {
			return fmt.Errorf("recordlog: %w", err)
		}
		return SyncDir(dir)
	}
	return nil
}

// importInto writes what export writes as segment 1 of a new log, in
// dir + ".importing", and renames that directory to dir.
func importInto(dir, src string, export func(*Writer) error) error {
	tmp := dir + ".importing"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	seg, err := Create(tmp, 1)
	if err != nil {
		return err
	}
	defer seg.File.Close()
	w := &Writer{w: bufio.NewWriterSize(seg.File, 1<<20)}
	w.w.Write(Magic)
	if err := export(w); err != nil {
		return err
	}
	if err := w.commit(); err != nil {
		return err
	}
	if err := w.w.Flush(); err != nil {
		return err
	}
	if err := seg.Sync(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, importedMarker), []byte(src+"\n"), 0o600); err != nil {
		return err
	}
	if err := SyncDir(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(dir))
}
