package recordlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/torpor-dev/torpor/store"
)

// Entry is one frame Scan found: its type and fields (aliasing the
// segment's bytes, which stay valid) and where it is.
type Entry struct {
	Type   byte
	Fields []byte
	Off    int64
	N      int
}

// Cut is what Scan cut off the end of a last segment: a torn tail, the
// frames of a write a crash cut short, whose callers were never told they
// were stored. A zero Cut cut nothing. The library does not log; its
// user (the relay) does.
type Cut struct {
	Path   string
	Offset int64 // where the frames of acknowledged commits end, and the file now
	Bytes  int64 // how many bytes were dropped (trailing zeros not counted)
	// Copy is the file that keeps the bytes cut off (Path + ".cut-" and
	// the time), in case an operator wants to look at them.
	Copy string
}

// DamageError reports a segment whose bytes are damaged: a frame that
// fails its CRC or does not parse, followed by an acknowledged commit; a
// bad frame in any segment but the last; a damaged header. Scan changes
// nothing then. It unwraps to a *store.CorruptError, so a caller that
// reports every store's damage alike (the relay) needs only that type;
// Path and Offset say where, for the operator.
type DamageError struct {
	Path    string
	Offset  int64
	Problem string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("recordlog: %s is damaged at offset %d: %s", e.Path, e.Offset, e.Problem)
}

// Unwrap returns the damage as a *store.CorruptError.
func (e *DamageError) Unwrap() error {
	return &store.CorruptError{Path: e.Path, Problems: []string{fmt.Sprintf("offset %d: %s", e.Offset, e.Problem)}}
}

// ScanOptions say how Scan treats a segment.
type ScanOptions struct {
	// Last is set for the last segment, the only one a crash can have left
	// torn.
	Last bool
	// Now names the copy of a cut tail (zero: time.Now).
	Now time.Time
	// Buf, when not nil, is the buffer Scan reads the segment into,
	// grown as needed and left in *Buf for the next Scan: a user that
	// scans many segments and keeps nothing of an Entry's Fields after
	// apply returns allocates one buffer instead of one per segment.
	Buf *[]byte
}

// sectorSize is the smallest unit a disk writes whole; a torn write
// leaves whole sectors unwritten (zeros, since the log writes zeros
// ahead of its frames).
const sectorSize = 512

// Scan reads segment s into its user: decode turns each frame into the
// user's value (an error is damage at that frame), and apply takes the
// values of each complete commit, in order: in a version 2 segment the
// frames before a valid commit frame, in a version 1 segment each frame.
// It sets s.Size and s.Alloc.
//
// A last segment may end in a torn tail: bytes after the last complete
// commit that no valid commit follows, whose first bad frame is cut short
// by the end of the file or has a sector of zeros (or whose frames end at
// zeros and have no commit frame). Scan truncates it there, keeps a copy
// of what it cut and returns the Cut. A last segment whose header was
// never completely written starts again empty. Anything else that is not
// frames and zeros is a *DamageError, and nothing is changed.
func Scan[T any](s *Segment, o ScanOptions, decode func(Entry) (T, error), apply func([]T)) (Cut, error) {
	data, err := readSegment(s, o.Buf)
	if err != nil {
		return Cut{}, fmt.Errorf("recordlog: reading a segment: %w", err)
	}
	v2 := bytes.HasPrefix(data, Magic)
	if !v2 && !bytes.HasPrefix(data, MagicV1) {
		if o.Last && headerUnwritten(data) {
			return Cut{}, s.WriteHeader()
		}
		return Cut{}, &DamageError{Path: s.Path, Problem: "no segment header"}
	}
	s.Version = 1
	if v2 {
		s.Version = 2
	}
	sc := scanner[T]{data: data, v2: v2, decode: decode, apply: apply}
	sc.run(len(Magic))
	if sc.problem == "" && allZero(data[sc.off:]) && len(sc.pending) == 0 {
		s.Size, s.Alloc = int64(sc.off), int64(len(data))
		return Cut{}, nil
	}
	if err := sc.classify(o.Last); err != nil {
		return Cut{}, &DamageError{Path: s.Path, Offset: int64(sc.off), Problem: err.Error()}
	}
	return s.cutTail(data, sc.good, o.Now)
}

// scanner reads one segment's frames.
type scanner[T any] struct {
	data    []byte
	v2      bool
	decode  func(Entry) (T, error)
	apply   func([]T)
	pending []T
	// off is where reading stopped; good where the last complete commit
	// ends; start where the commit being read began.
	off, good, start int
	problem          string
	// The bad frame at off shows a torn write: it is cut short by the end
	// of the file, or a sector of it was never written (zeroed, also when
	// the frames end at zeros).
	cutShort, zeroed bool
}

// run reads frames from off, the end of the header, until the frames end
// or one is bad. A commit's length does not count the header.
func (sc *scanner[T]) run(off int) {
	sc.off, sc.good, sc.start = off, off, off
	for sc.off < len(sc.data) && !endOfFrames(sc.data[sc.off:]) {
		typ, fields, n, err := Decode(sc.data[sc.off:])
		if err == nil && sc.v2 && typ == TypeCommit {
			if err = checkCommit(sc.data, fields, sc.start, sc.off); err == nil {
				sc.apply(sc.pending)
				sc.pending = sc.pending[:0]
				sc.off += n
				sc.good, sc.start = sc.off, sc.off
				continue
			}
		}
		var v T
		if err == nil && typ != TypeCommit {
			v, err = sc.decode(Entry{Type: typ, Fields: fields, Off: int64(sc.off), N: n})
		}
		if err != nil {
			sc.problem = err.Error()
			sc.cutShort, sc.zeroed = errors.Is(err, ErrTorn), sc.zeroSector()
			return
		}
		if sc.v2 {
			sc.pending = append(sc.pending, v)
		} else {
			sc.apply([]T{v})
			sc.good = sc.off + n
		}
		sc.off += n
	}
	sc.zeroed = true // the frames end at zeros (or the end of the file)
}

// zeroSector reports whether the frame at sc.off has a sector-aligned
// part that is all zeros: the mark of a write that did not reach every
// sector. A frame whose length field is impossible is judged by its
// header alone (its extent is unknown).
func (sc *scanner[T]) zeroSector() bool {
	end := sc.off + HeaderLen
	if l, err := Len(sc.data[sc.off:]); err == nil {
		end = sc.off + l
	}
	return zeroSectorIn(sc.data, sc.off, min(end, len(sc.data)))
}

// zeroSectorIn reports whether data[from:to], split at sector
// boundaries, has a part that is all zeros.
func zeroSectorIn(data []byte, from, to int) bool {
	for at := from; at < to; {
		next := min(to, (at/sectorSize+1)*sectorSize)
		if allZero(data[at:next]) {
			return true
		}
		at = next
	}
	return false
}

// classify returns nil when what follows sc.good is a torn tail and the
// damage otherwise.
func (sc *scanner[T]) classify(last bool) error {
	problem := sc.problem
	if problem == "" {
		problem = "bytes after the last frame"
		if len(sc.pending) > 0 && allZero(sc.data[sc.off:]) {
			problem = "frames without a commit frame"
		}
	}
	if !last {
		return errors.New(problem)
	}
	if at, ok := sc.acknowledgedAfter(); ok {
		return fmt.Errorf("%s, and an acknowledged commit follows at offset %d", problem, at)
	}
	if sc.commitProven() {
		return fmt.Errorf("%s: the header of a commit frame whose commit is whole", problem)
	}
	if sc.problem != "" && !sc.cutShort && !sc.zeroed {
		return fmt.Errorf("%s, in bytes that a crash does not leave (no sector of zeros, not cut short)", problem)
	}
	return nil
}

// commitProven reports whether the bad frame at sc.off is a commit frame
// whose header alone is damaged: its body names the length and CRC of the
// bytes since the commit before, and they match. Then that commit was
// acknowledged.
func (sc *scanner[T]) commitProven() bool {
	if !sc.v2 || sc.off+HeaderLen+1 >= len(sc.data) || sc.data[sc.off+HeaderLen] != TypeCommit {
		return false
	}
	body := sc.data[sc.off+HeaderLen+1:]
	n, k := binary.Uvarint(body)
	if k <= 0 || len(body) < k+4 || n != uint64(sc.off-sc.start) {
		return false
	}
	return crc32.Checksum(sc.data[sc.start:sc.off], castagnoli) == binary.LittleEndian.Uint32(body[k:])
}

// acknowledgedAfter finds what proves the bytes at sc.off were
// acknowledged, and where: in version 2 a commit frame after them, unless
// it is the last one, it ends the very commit the bad bytes are in, and
// they show a torn write (a sector never written: the disk wrote the
// commit's later sectors and not an earlier one before the power went,
// and its fdatasync never returned); in version 1, which has no commit
// frames, any valid frame after them.
func (sc *scanner[T]) acknowledgedAfter() (int, bool) {
	if sc.v2 {
		at, start, ok := validCommitAfter(sc.data, sc.off)
		if !ok {
			return 0, false
		}
		// The zeros must lie before the commit frame: a torn write leaves
		// unwritten sectors among the ones it wrote, not after them.
		if _, _, later := validCommitAfter(sc.data, at); start == sc.start && !later && zeroSectorIn(sc.data, sc.off, at) {
			return 0, false
		}
		return at, true
	}
	for i := sc.off + 1; i+HeaderLen < len(sc.data); i++ {
		typ, fields, n, err := Decode(sc.data[i:])
		if err != nil {
			continue
		}
		if _, err := sc.decode(Entry{Type: typ, Fields: fields, Off: int64(i), N: n}); err == nil {
			return i, true
		}
	}
	return 0, false
}

// cutTail keeps a copy of data[off:] and truncates the segment at off.
func (s *Segment) cutTail(data []byte, off int, now time.Time) (Cut, error) {
	if now.IsZero() {
		now = time.Now()
	}
	cut := Cut{Path: s.Path, Offset: int64(off), Bytes: nonZero(data[off:])}
	if cut.Bytes > 0 {
		cut.Copy = fmt.Sprintf("%s.cut-%s", s.Path, now.UTC().Format("20060102T150405.000000000Z"))
		if err := os.WriteFile(cut.Copy, data[off:int64(off)+cut.Bytes], 0o600); err != nil {
			return Cut{}, fmt.Errorf("recordlog: keeping a copy of the torn tail of %s: %w", s.Path, err)
		}
		if err := SyncDir(filepath.Dir(s.Path)); err != nil {
			return Cut{}, err
		}
	}
	return cut, s.Cut(int64(off))
}

// headerUnwritten reports whether a segment without its whole header is
// one whose first commit never completed: empty, cut inside the header,
// or zeros after what was written of it (a power cut after the file's
// length was made durable and before its data). The header goes to disk
// in the same write and fdatasync as the segment's first frames, so such
// a segment holds nothing that was acknowledged. Any other byte there is
// damage.
func headerUnwritten(data []byte) bool {
	n := 0
	for n < len(data) && n < len(Magic) && (data[n] == Magic[n] || data[n] == MagicV1[n]) {
		n++
	}
	return allZero(data[n:])
}

// endOfFrames reports whether b starts with no frame: a zero length, or
// fewer bytes than a length, all zero.
func endOfFrames(b []byte) bool {
	if len(b) < 4 {
		return allZero(b)
	}
	return b[0]|b[1]|b[2]|b[3] == 0
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// nonZero returns the length of b without its trailing zeros.
func nonZero(b []byte) int64 {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return int64(n)
}

// readSegment reads s whole, into *buf when buf is not nil.
func readSegment(s *Segment, buf *[]byte) ([]byte, error) {
	if buf == nil {
		return os.ReadFile(s.Path)
	}
	fi, err := s.File.Stat()
	if err != nil {
		return nil, err
	}
	if int64(cap(*buf)) < fi.Size() {
		*buf = make([]byte, fi.Size())
	}
	data := (*buf)[:fi.Size()]
	n, err := s.File.ReadAt(data, 0)
	if err == io.EOF && int64(n) == fi.Size() {
		err = nil
	}
	return data[:n], err
}
