package recordlog

import (
	"errors"
	"os"
	"testing"

	"github.com/torpor-dev/torpor/store"
)

// frames returns n frames of type 'X' whose fields are one string each.
func frames(n int) []byte {
	var buf []byte
	for i := range n {
		var at int
		buf, at = Begin(buf, 'X')
		buf = AppendString(buf, string(rune('a'+i)))
		buf = End(buf, at)
	}
	return buf
}

// writeSegment writes Magic and content as segment 1 of a new directory.
func writeSegment(t *testing.T, content []byte) *Segment {
	t.Helper()
	dir := t.TempDir()
	s, err := Create(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.File.Close() })
	if _, err := s.File.Write(append(append([]byte(nil), Magic...), content...)); err != nil {
		t.Fatal(err)
	}
	return s
}

func scan(s *Segment, last bool) ([]string, Cut, error) {
	var got []string
	cut, err := Scan(s, last, func(e Entry) (string, error) {
		d := NewFields(e.Fields)
		v := d.String()
		return v, d.Err()
	}, func(vs []string) { got = append(got, vs...) })
	return got, cut, err
}

// TestScanReadsFrames: every frame is read, in order, and zeros after
// them end the frames.
func TestScanReadsFrames(t *testing.T) {
	s := writeSegment(t, append(frames(3), make([]byte, 100)...))
	got, cut, err := scan(s, true)
	if err != nil || len(got) != 3 || got[2] != "c" || cut != (Cut{}) {
		t.Fatalf("Scan = %v, %+v, %v", got, cut, err)
	}
	if want := int64(len(Magic) + len(frames(3))); s.Size != want {
		t.Errorf("Size %d, want %d", s.Size, want)
	}
}

// TestScanCutsTornTail: a last segment that ends inside a frame is cut
// where the frames end, and the Cut says where; any other segment is
// refused as corrupt.
func TestScanCutsTornTail(t *testing.T) {
	full := frames(3)
	torn := full[:len(full)-3]
	s := writeSegment(t, torn)
	if _, _, err := scan(s, false); !errors.As(err, new(*store.CorruptError)) {
		t.Errorf("not the last segment: %v, want a CorruptError", err)
	}
	got, cut, err := scan(s, true)
	if err != nil || len(got) != 2 || cut.Offset != int64(len(Magic)+len(frames(2))) || cut.Bytes == 0 {
		t.Fatalf("Scan = %v, %+v, %v", got, cut, err)
	}
	if fi, _ := os.Stat(s.Path); fi.Size() != cut.Offset {
		t.Errorf("file is %d bytes, want %d", fi.Size(), cut.Offset)
	}
}
