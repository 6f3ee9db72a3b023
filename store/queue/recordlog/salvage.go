package recordlog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Dropped is a run of bytes Salvage could not read as frames.
type Dropped struct {
	Offset, Bytes int64
}

// Salvaged is what Salvage did to one segment.
type Salvaged struct {
	Path string
	// Copy is the damaged file as it was (Path + ".damaged-" and the
	// time); empty when the segment needed no repair.
	Copy string
	// Frames is how many frames were kept, Dropped what was not.
	Frames  int
	Dropped []Dropped
}

// Salvage repairs segment file path, whose Scan refused it: it keeps a
// copy of the file as it is, then rewrites it with every frame it can
// still read (one whose CRC holds and that check accepts), in one commit,
// and says what it dropped. A frame is looked for at every offset after a
// bad one. Frames of a commit that was never acknowledged are kept too,
// and a damaged tombstone lets its records come back: a repair may
// deliver a record twice (the device's replay cache drops the repeat),
// never lose one it can read. A segment that needs no repair (Scan
// accepts it as it is) is left alone.
func Salvage(path string, now time.Time, check func(Entry) error) (Salvaged, error) {
	out := Salvaged{Path: path}
	data, err := os.ReadFile(path)
	if err != nil {
		return out, fmt.Errorf("recordlog: %w", err)
	}
	kept, dropped := salvageFrames(data, check)
	out.Dropped = dropped
	for off := 0; off < len(kept); out.Frames++ {
		_, _, n, _ := Decode(kept[off:])
		off += n
	}
	fixed := append(bytes.Clone(Magic), kept...)
	if len(kept) > 0 {
		fixed = AppendCommit(fixed, len(Magic))
	}
	if len(dropped) == 0 && bytes.HasPrefix(data, Magic) && wholeCommits(data, check) {
		return out, nil
	}
	out.Copy = fmt.Sprintf("%s.damaged-%s", path, now.UTC().Format("20060102T150405.000000000Z"))
	if err := writeSynced(out.Copy, data); err != nil {
		return out, err
	}
	if err := writeSynced(path+".repaired", fixed); err != nil {
		return out, err
	}
	if err := os.Rename(path+".repaired", path); err != nil {
		return out, fmt.Errorf("recordlog: %w", err)
	}
	return out, SyncDir(filepath.Dir(path))
}

// salvageFrames returns the valid frames of data but commit frames, and
// the runs of bytes that are neither frames nor the zeros after them.
func salvageFrames(data []byte, check func(Entry) error) ([]byte, []Dropped) {
	var kept []byte
	var dropped []Dropped
	off, bad := 0, -1
	if bytes.HasPrefix(data, Magic) || bytes.HasPrefix(data, MagicV1) {
		off = len(Magic)
	}
	flush := func(end int) {
		if bad >= 0 {
			dropped = append(dropped, Dropped{Offset: int64(bad), Bytes: int64(end - bad)})
			bad = -1
		}
	}
	for off < len(data) {
		if bad < 0 && endOfFrames(data[off:]) && allZero(data[off:]) {
			break
		}
		typ, fields, n, err := Decode(data[off:])
		if err == nil && typ != TypeCommit {
			err = check(Entry{Type: typ, Fields: fields, Off: int64(off), N: n})
		}
		if err != nil {
			if bad < 0 {
				bad = off
			}
			off++
			continue
		}
		flush(off)
		if typ != TypeCommit {
			kept = append(kept, data[off:off+n]...)
		}
		off += n
	}
	if bad >= 0 {
		flush(bad + int(nonZero(data[bad:])))
	}
	return kept, dropped
}

// wholeCommits reports whether data's frames all belong to whole commits.
func wholeCommits(data []byte, check func(Entry) error) bool {
	sc := scanner[struct{}]{data: data, v2: true,
		decode: func(e Entry) (struct{}, error) { return struct{}{}, check(e) },
		apply:  func([]struct{}) {}}
	sc.run(len(Magic))
	return sc.problem == "" && len(sc.pending) == 0 && allZero(data[sc.off:])
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("recordlog: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("recordlog: %w", err)
	}
	return datasync(f)
}
