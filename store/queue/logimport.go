package queue

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// importedMarker is written into a log directory imported from a bbolt
// file until that file has been renamed (see prepareLogDir).
const importedMarker = "imported-from-bolt"

// prepareLogDir makes dir ready for OpenLog. When it does not exist and
// boltPath names a bbolt queue file, the file is imported into a new
// directory that is then renamed to dir, and the file is renamed to
// boltPath + ".imported". Each step is durable before the next, so a crash
// leaves either no log (the import runs again) or the whole log, with
// importedMarker present until the bbolt file is renamed.
func prepareLogDir(dir, boltPath string) error {
	_, err := os.Stat(dir)
	switch {
	case err == nil:
		return finishImport(dir, boltPath)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("queue: %w", err)
	}
	if boltPath != "" {
		if _, err := os.Stat(boltPath); err == nil {
			if err := importBolt(boltPath, dir); err != nil {
				return fmt.Errorf("queue: importing %s into %s: %w", boltPath, dir, err)
			}
			return finishImport(dir, boltPath)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	return syncDir(filepath.Dir(dir))
}

// finishImport renames an imported bbolt file, if it is still there, and
// removes the marker. A bbolt file beside a log that was not imported
// from it is refused: nothing already queued is dropped unread.
func finishImport(dir, boltPath string) error {
	marker := filepath.Join(dir, importedMarker)
	_, merr := os.Stat(marker)
	if boltPath != "" {
		if _, err := os.Stat(boltPath); err == nil {
			if merr != nil {
				return fmt.Errorf("queue: %s and the record log %s both exist and the log was not imported from it; move one of them away", boltPath, dir)
			}
			if err := os.Rename(boltPath, boltPath+".imported"); err != nil {
				return fmt.Errorf("queue: %w", err)
			}
			if err := syncDir(filepath.Dir(boltPath)); err != nil {
				return err
			}
		}
	}
	if merr == nil {
		if err := os.Remove(marker); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
		return syncDir(dir)
	}
	return nil
}

// importBolt writes the records and last seqs of the bbolt queue at
// boltPath as segment 1 of a new log, in dir + ".importing", and renames
// that directory to dir.
func importBolt(boltPath, dir string) error {
	tmp := dir + ".importing"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	src, err := OpenBolt(boltPath, nil)
	if err != nil {
		return err
	}
	defer src.Close()
	seg, err := createSegment(tmp, 1)
	if err != nil {
		return err
	}
	defer seg.f.Close()
	w := bufio.NewWriterSize(seg.f, 1<<20)
	w.Write(segmentMagic)
	if err := src.db.View(func(tx *bolt.Tx) error { return exportBolt(tx, w) }); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := datasync(seg.f); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, importedMarker), []byte(boltPath+"\n"), 0o600); err != nil {
		return err
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

// exportBolt writes every agent's last seq and records as frames.
func exportBolt(tx *bolt.Tx, w *bufio.Writer) error {
	var buf []byte
	return tx.Bucket(bucketAgents).ForEachBucket(func(k []byte) error {
		agent := string(k)
		ab := tx.Bucket(bucketAgents).Bucket(k)
		c, err := parseCounters(agent, ab.Get(keyCounters))
		if err != nil {
			return err
		}
		buf = appendSeqFrame(buf[:0], agent, c.last)
		if _, err := w.Write(buf); err != nil {
			return err
		}
		recs := ab.Bucket(bucketRecords)
		if recs == nil {
			return nil
		}
		return recs.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("%w: record key of %d bytes under %s", ErrCorrupt, len(k), agent)
			}
			r, err := decodeRecord(agent, getSeq(k), v)
			if err != nil {
				return err
			}
			buf = appendRecordFrame(buf[:0], r)
			_, err = w.Write(buf)
			return err
		})
	})
}
