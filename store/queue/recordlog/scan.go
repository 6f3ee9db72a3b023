package recordlog

import (
	"bytes"
	"fmt"
	"os"

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
	Offset int64 // where the file now ends
	Bytes  int64 // how many bytes were dropped (not counting zeros)
}

// Scan reads segment s into its user: decode turns each frame into the
// user's value (an error is damage at that frame), and apply takes the
// values of each commit, in order. It sets s.Size and s.Alloc.
//
// In the last segment (last) a frame cut short or failing its CRC ends
// the frames, and when anything but zeros follows, the file is truncated
// there and the Cut says so (a torn write may have reached later pages
// and not earlier ones). A last segment without its whole header whose
// first commit never completed (empty, cut inside the header, zeros
// after it) starts again empty. Anywhere else both are a
// *store.CorruptError and nothing is changed.
func Scan[T any](s *Segment, last bool, decode func(Entry) (T, error), apply func([]T)) (Cut, error) {
	data, err := os.ReadFile(s.Path)
	if err != nil {
		return Cut{}, fmt.Errorf("recordlog: reading a segment: %w", err)
	}
	if !bytes.HasPrefix(data, Magic) {
		if last && headerUnwritten(data) {
			return Cut{}, s.WriteHeader()
		}
		return Cut{}, &store.CorruptError{Path: s.Path, Problems: []string{"no segment header"}}
	}
	off, problem := len(Magic), ""
	for off < len(data) && !endOfFrames(data[off:]) {
		typ, fields, n, err := Decode(data[off:])
		var v T
		if err == nil {
			v, err = decode(Entry{Type: typ, Fields: fields, Off: int64(off), N: n})
		}
		if err != nil {
			problem = fmt.Sprintf("frame at offset %d: %v", off, err)
			break
		}
		apply([]T{v})
		off += n
	}
	if problem == "" && allZero(data[off:]) {
		s.Size, s.Alloc = int64(off), int64(len(data))
		return Cut{}, nil
	}
	if !last {
		if problem == "" {
			problem = fmt.Sprintf("bytes after the last frame at offset %d", off)
		}
		return Cut{}, &store.CorruptError{Path: s.Path, Problems: []string{problem}}
	}
	cut := Cut{Path: s.Path, Offset: int64(off), Bytes: nonZero(data[off:])}
	return cut, s.Cut(int64(off))
}

// headerUnwritten reports whether a segment without its whole header is
// one whose first commit never completed: empty, cut inside the header,
// or zeros after what was written of it (a power cut after the file's
// length was made durable and before its data). The header goes to disk
// in the same write and fdatasync as the segment's first frames, so such
// a segment holds nothing that was acknowledged. Any other byte there is
// corruption.
func headerUnwritten(data []byte) bool {
	n := 0
	for n < len(data) && n < len(Magic) && data[n] == Magic[n] {
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
