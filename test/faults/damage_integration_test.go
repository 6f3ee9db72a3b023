//go:build integration

package faults

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDamage: a relay stopped with 300 acknowledged messages (100 of them
// drained) has eight bytes flipped at one of many offsets of one of its
// store files (the queue, agents.db, mqtt.db), one offset at a time. Each
// start is either refused, exit status 65, with a message naming the
// file and the fix; or the relay serves, and every acknowledged message
// not yet drained is delivered, unless its log says what it withheld
// (records failing their checksum) or cut (a torn tail). A crash, a
// drain that fails or a silent loss fails the case.
func TestDamage(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			f := newFixture(t, engine, t.TempDir())
			f.fill(t, 300, 100, 200)
			snap := snapshot(t, f.dir)
			for _, file := range storeFiles(t, snap) {
				for _, off := range offsets(used(t, filepath.Join(snap, file))) {
					t.Run(fmt.Sprintf("%s@%d", file, off), func(t *testing.T) {
						restore(t, snap, f.dir)
						path := filepath.Join(f.dir, file)
						flip(t, path, off, 8)
						damaged(t, f, path)
					})
				}
			}
		})
	}
}

// storeFiles returns the store files under dir, relative to it: every
// regular file but the lock and the store marker (no store).
func storeFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "LOCK" || d.Name() == "stores.marker" {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 3 {
		t.Fatalf("store files %v: want the queue, agents.db and mqtt.db", out)
	}
	return out
}

// offsets are where a file of size bytes is damaged: its first bytes
// (bbolt's first meta page, the record log's segment header), then one
// offset in each 24th of it, in turn a bbolt page header (4 KiB aligned),
// the elements after it and the middle of a page, and its last bytes.
func offsets(size int64) []int64 {
	out := []int64{0, 16}
	for k := int64(1); k < 24; k++ {
		off := size * k / 24 &^ 4095
		switch k % 3 {
		case 1: // the elements' headers at a leaf page's start
			off += 100 + 37*k
		case 2: // a value (a record's body) in the middle of a page
			off += 2048 + 61*k
		}
		out = append(out, off)
	}
	out = append(out, size-8)
	seen := map[int64]bool{}
	var uniq []int64
	for _, o := range out {
		if o >= 0 && o < size && !seen[o] {
			seen[o] = true
			uniq = append(uniq, o)
		}
	}
	return uniq
}

// used returns the length of the file at path that holds data: a bbolt
// file's pages up to its high-water mark (its meta pages' page count; the
// rest of the file is room to grow), any other file's bytes up to its
// last one that is not zero.
func used(t testing.TB, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(b))
	if len(b) < 4096 || binary.LittleEndian.Uint32(b[16:]) != 0xED0CDAED { // bbolt's magic
		return int64(len(bytes.TrimRight(b, "\x00"))) // the record log writes zeros ahead
	}
	page := int64(binary.LittleEndian.Uint32(b[24:]))
	var hw int64
	for _, m := range []int64{0, page} {
		if m+64 <= size {
			hw = max(hw, int64(binary.LittleEndian.Uint64(b[m+16+40:]))*page)
		}
	}
	return min(size, hw)
}

// flip inverts n bytes of the file at path from off (fewer at its end).
func flip(t testing.TB, path string, off int64, n int) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b := make([]byte, n)
	m, _ := fh.ReadAt(b, off)
	for i := range b[:m] {
		b[i] ^= 0xFF
	}
	if _, err := fh.WriteAt(b[:m], off); err != nil {
		t.Fatal(err)
	}
}

// reportedRE matches the log lines by which a relay that started says it
// withheld or cut records.
var reportedRE = regexp.MustCompile(`fail their checksum|meta page \d of .* fails its checksum|\btorn\b|\bcut\b`)

// damaged starts the relay on the fixture's directory after path was
// damaged and checks what it does (TestDamage).
func damaged(t *testing.T, f *fixture, path string) {
	r, exit, log := tryStart(t, f)
	if r == nil {
		if exit != 65 || !strings.Contains(log, path) && !strings.Contains(log, filepath.Dir(path)) {
			t.Fatalf("refused with exit status %d, want 65 and a message naming %s:\n%s", exit, path, log)
		}
		if !strings.Contains(log, "--reinitialise") && !strings.Contains(log, "aside") {
			t.Fatalf("refused without naming the fix:\n%s", log)
		}
		return
	}
	defer r.Kill()
	l := f.l.clone()
	if err := l.drain(r.URL, f.dev); err != nil {
		t.Fatalf("the relay started on the damaged file, then the drain failed: %v\n%s", err, r.Log())
	}
	l.check(t, "started on it", reportedRE.MatchString(r.Log()))
}
