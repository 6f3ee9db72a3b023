package initramfs_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/torpor-dev/torpor/test/qemu/initramfs"
)

type entry struct {
	Name       string
	Mode       uint32
	RMaj, RMin uint32
	Data       string
}

// parse reads a gzip newc archive back, checking the format strictly: the
// magic, the 4-byte alignment of names and data, and the trailer.
func parse(t *testing.T, b []byte) []entry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	off := 0
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(raw[off+6+8*i:off+6+8*i+8]), 16, 32)
		if err != nil {
			t.Fatalf("header field %d at %d: %v", i, off, err)
		}
		return uint32(v)
	}
	for {
		if string(raw[off:off+6]) != "070701" {
			t.Fatalf("bad magic at %d: %q", off, raw[off:off+6])
		}
		mode, size, rmaj, rmin, nsize := field(1), field(6), field(9), field(10), field(11)
		name := string(raw[off+110 : off+110+int(nsize)-1])
		if raw[off+110+int(nsize)-1] != 0 {
			t.Fatalf("name %q not NUL-terminated", name)
		}
		off = align(off + 110 + int(nsize))
		data := string(raw[off : off+int(size)])
		off = align(off + int(size))
		if name == "TRAILER!!!" {
			if len(bytes.TrimRight(raw[off:], "\x00")) != 0 {
				t.Fatalf("data after the trailer")
			}
			return out
		}
		out = append(out, entry{name, mode, rmaj, rmin, data})
	}
}

func align(n int) int { return (n + 3) &^ 3 }

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := initramfs.NewWriter(&buf)
	steps := []error{
		w.Dir("dev", 0o755),
		w.CharDev("/dev/console", 0o600, 5, 1),
		w.File("init", 0o755, []byte("#!init")),
		w.File("lib/modules/gpio_keys.ko", 0o644, []byte("abc")), // creates lib, lib/modules
		w.File("bin/x", 0o755, []byte("1234")),
		w.Symlink("sbin/init", "/init"),
		w.Dir("lib", 0o700), // already created implicitly: ignored
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{"dev", 0o40755, 0, 0, ""},
		{"dev/console", 0o20600, 5, 1, ""},
		{"init", 0o100755, 0, 0, "#!init"},
		{"lib", 0o40755, 0, 0, ""},
		{"lib/modules", 0o40755, 0, 0, ""},
		{"lib/modules/gpio_keys.ko", 0o100644, 0, 0, "abc"},
		{"bin", 0o40755, 0, 0, ""},
		{"bin/x", 0o100755, 0, 0, "1234"},
		{"sbin", 0o40755, 0, 0, ""},
		{"sbin/init", 0o120777, 0, 0, "/init"},
	}
	if diff := cmp.Diff(want, parse(t, buf.Bytes())); diff != "" {
		t.Errorf("archive (-want +got):\n%s", diff)
	}
}

func TestErrors(t *testing.T) {
	w := initramfs.NewWriter(io.Discard)
	if err := w.File("/", 0o644, nil); err == nil {
		t.Error("File(/) succeeded")
	}
	if err := w.File("a", 0o644, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.File("./a", 0o644, nil); err == nil {
		t.Error("duplicate entry accepted")
	}
	if err := w.Close(); err == nil {
		t.Error("Close after an error succeeded")
	}
}

func TestAlignment(t *testing.T) {
	for n := range 9 {
		var buf bytes.Buffer
		w := initramfs.NewWriter(&buf)
		name := fmt.Sprintf("f%s", bytes.Repeat([]byte("x"), n))
		if err := w.File(name, 0o644, bytes.Repeat([]byte("d"), n)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := parse(t, buf.Bytes()); len(got) != 1 || got[0].Name != name || len(got[0].Data) != n {
			t.Errorf("name/data length %d: got %+v", n, got)
		}
	}
}
