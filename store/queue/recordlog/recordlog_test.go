package recordlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store"
)

// commit returns a commit of the frames of type 'X' named by names, each
// holding its name, ended by its commit frame.
func commit(names ...string) []byte {
	var buf []byte
	for _, name := range names {
		var at int
		buf, at = Begin(buf, 'X')
		buf = AppendString(buf, name)
		buf = End(buf, at)
	}
	return AppendCommit(buf, 0)
}

// v1Frames returns frames as format version 1 wrote them: no commit frame.
func v1Frames(names ...string) []byte {
	c := commit(names...)
	var out []byte
	for off := 0; off < len(c); {
		typ, _, n, err := Decode(c[off:])
		if err != nil {
			panic(err)
		}
		if typ != TypeCommit {
			out = append(out, c[off:off+n]...)
		}
		off += n
	}
	return out
}

// writeSegment writes magic and content as segment 1 of a new directory.
func writeSegment(t *testing.T, magic []byte, content ...[]byte) *Segment {
	t.Helper()
	dir := t.TempDir()
	s, err := Create(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.File.Close() })
	if _, err := s.File.Write(bytes.Join(append([][]byte{magic}, content...), nil)); err != nil {
		t.Fatal(err)
	}
	return s
}

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func scan(s *Segment, last bool) ([]string, Cut, error) {
	var got []string
	cut, err := Scan(s, ScanOptions{Last: last, Now: t0}, func(e Entry) (string, error) {
		d := NewFields(e.Fields)
		v := d.String()
		if e.Type != 'X' {
			d.Fail("type %q", e.Type)
		}
		return v, d.Err()
	}, func(vs []string) { got = append(got, vs...) })
	return got, cut, err
}

// TestScanReadsCommits: every commit is read, in order, and zeros after
// them end the frames.
func TestScanReadsCommits(t *testing.T) {
	c := append(commit("a", "b"), commit("c")...)
	s := writeSegment(t, Magic, c, make([]byte, 100))
	got, cut, err := scan(s, true)
	if err != nil || len(got) != 3 || got[2] != "c" || cut != (Cut{}) {
		t.Fatalf("Scan = %v, %+v, %v", got, cut, err)
	}
	if want := int64(len(Magic) + len(c)); s.Size != want || s.Version != 2 {
		t.Errorf("Size %d, version %d; want %d, 2", s.Size, s.Version, want)
	}
}

// TestScanCutsTornTail: the last commit cut short at any byte, or its
// frames without their commit frame, or with a sector never written, is
// a torn tail in the last segment: cut where the commit before ends, a
// copy kept of what was cut. In any other segment it is damage.
func TestScanCutsTornTail(t *testing.T) {
	first, last := commit("a"), commit("b", string(bytes.Repeat([]byte{'x'}, 1500)))
	unwritten := bytes.Clone(last)
	at := 1024 - len(Magic) - len(first)
	clear(unwritten[at : at+512]) // the sector at 1024 of the file never written
	cases := map[string][]byte{"no commit frame": last[:len(last)-15], "sector unwritten": unwritten}
	for cut := 1; cut < len(last); cut += 97 {
		cases[string(rune('0'+cut%10))+" cut"] = last[:cut]
	}
	for name, tail := range cases {
		t.Run(name, func(t *testing.T) {
			s := writeSegment(t, Magic, first, tail)
			if _, _, err := scan(s, false); !errors.As(err, new(*DamageError)) {
				t.Errorf("not the last segment: %v, want a DamageError", err)
			}
			got, cut, err := scan(s, true)
			end := int64(len(Magic) + len(first))
			if err != nil || len(got) != 1 || cut.Offset != end || cut.Bytes == 0 {
				t.Fatalf("Scan = %v, %+v, %v", got, cut, err)
			}
			if fi, _ := os.Stat(s.Path); fi.Size() != end {
				t.Errorf("file is %d bytes, want %d", fi.Size(), end)
			}
			if kept, err := os.ReadFile(cut.Copy); err != nil || !bytes.HasPrefix(tail, kept) || int64(len(kept)) != cut.Bytes {
				t.Errorf("copy of the cut: %d bytes, %v", len(kept), err)
			}
		})
	}
}

// TestScanRefusesDamage: a bad frame followed by an acknowledged commit,
// a byte flipped anywhere in the last commit, a damaged header: the scan
// refuses with a DamageError (a *store.CorruptError too) naming the file
// and the offset, and the file is unchanged.
func TestScanRefusesDamage(t *testing.T) {
	a, b, c := commit("a", "aa"), commit("b"), commit("c", "cc")
	content := bytes.Join([][]byte{Magic, a, b, c}, nil)
	type flip struct {
		name string
		off  int
	}
	flips := []flip{{"header", 3}, {"first frame", len(Magic) + 2}, {"middle commit", len(Magic) + len(a) + 10}}
	for off := len(content) - len(c); off < len(content); off++ {
		flips = append(flips, flip{"last commit", off})
	}
	for _, f := range flips {
		damaged := bytes.Clone(content)
		damaged[f.off] ^= 0x40
		s := writeSegment(t, damaged, make([]byte, 2000))
		before, _ := os.ReadFile(s.Path)
		_, _, err := scan(s, true)
		var de *DamageError
		if !errors.As(err, &de) || de.Path != s.Path || !errors.As(err, new(*store.CorruptError)) {
			t.Fatalf("%s, flip at %d: %v, want a DamageError", f.name, f.off, err)
		}
		if f.name != "header" && (de.Offset > int64(f.off) || de.Offset < int64(len(Magic))) {
			t.Errorf("%s, flip at %d: DamageError at offset %d", f.name, f.off, de.Offset)
		}
		if after, _ := os.ReadFile(s.Path); !bytes.Equal(before, after) {
			t.Errorf("%s, flip at %d: the refused scan changed the file", f.name, f.off)
		}
	}
}

// TestScanReadsVersion1: a segment of format version 1 (no commit frames)
// is read frame by frame; its torn tail is cut; a bad frame followed by a
// valid one is damage.
func TestScanReadsVersion1(t *testing.T) {
	frames := v1Frames("a", "b", "c")
	s := writeSegment(t, MagicV1, frames)
	if got, cut, err := scan(s, true); err != nil || len(got) != 3 || cut != (Cut{}) || s.Version != 1 {
		t.Fatalf("Scan = %v, %+v, %v, version %d", got, cut, err, s.Version)
	}
	s = writeSegment(t, MagicV1, frames[:len(frames)-2])
	if got, cut, err := scan(s, true); err != nil || len(got) != 2 || cut.Bytes == 0 {
		t.Fatalf("torn: Scan = %v, %+v, %v", got, cut, err)
	}
	damaged := bytes.Clone(frames)
	damaged[12] ^= 0x40
	s = writeSegment(t, MagicV1, damaged)
	if _, _, err := scan(s, true); !errors.As(err, new(*DamageError)) {
		t.Fatalf("a bad first frame before valid ones: %v, want a DamageError", err)
	}
}

// TestHeaderUnwritten: a last segment whose first commit never completed
// (empty, part of the header, zeros) starts again empty.
func TestHeaderUnwritten(t *testing.T) {
	for _, content := range [][]byte{nil, Magic[:3], append(bytes.Clone(Magic[:5]), make([]byte, 600)...)} {
		s := writeSegment(t, content)
		if got, _, err := scan(s, true); err != nil || len(got) != 0 || s.Size != int64(len(Magic)) {
			t.Errorf("%q: Scan = %v, %v, size %d", content, got, err, s.Size)
		}
	}
}

// TestScanNeverCutsAcknowledged flips each byte of a segment of three
// commits, in turn, and each byte of the zeros after them: a flip in a
// commit is always refused as damage; a flip in the zeros loses no
// commit (it is cut, or refused).
func TestScanNeverCutsAcknowledged(t *testing.T) {
	body := string(bytes.Repeat([]byte{'y'}, 700)) // commits across sector boundaries
	content := bytes.Join([][]byte{Magic, commit("a", body), commit("b"), commit("c", body, "cc")}, nil)
	end := len(content)
	content = append(content, make([]byte, 600)...)
	dir := t.TempDir()
	for off := 0; off < len(content); off++ {
		damaged := bytes.Clone(content)
		damaged[off] ^= 0x40
		if err := os.WriteFile(filepath.Join(dir, Name(1)), damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := scan(s, true)
		switch {
		case errors.As(err, new(*DamageError)):
		case err != nil:
			t.Fatalf("flip at %d: %v", off, err)
		case off < end:
			t.Fatalf("flip at %d, inside an acknowledged commit: opened with %d frames, want a DamageError", off, len(got))
		case len(got) != 6:
			t.Fatalf("flip at %d, in the zeros: %d frames, want all 6", off, len(got))
		}
		s.File.Close()
	}
}
