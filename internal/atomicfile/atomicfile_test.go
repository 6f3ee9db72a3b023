package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/internal/atomicfile"
)

// TestWriteFile: the file holds the new contents with mode perm and no
// temporary file is left beside it.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	for _, data := range []string{"old", "new contents"} {
		if err := atomicfile.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, data, 0o600)
	}
	checkOnly(t, dir, "state")
}

// TestCopyIn: what the reader gives replaces the file, through the named
// temporary file, which is gone after; a reader that fails leaves the old
// contents and no temporary file.
func TestCopyIn(t *testing.T) {
	dir := t.TempDir()
	path, tmp := filepath.Join(dir, "slot"), filepath.Join(dir, "slot.tmp")
	if err := atomicfile.CopyIn(tmp, path, strings.NewReader("build 1"), 0o700); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, "build 1", 0o700)
	broken := io.MultiReader(strings.NewReader("build 2, half"), failing{})
	if err := atomicfile.CopyIn(tmp, path, broken, 0o700); !errors.Is(err, errRead) {
		t.Fatalf("CopyIn from a failing reader = %v, want %v", err, errRead)
	}
	checkFile(t, path, "build 1", 0o700)
	checkOnly(t, dir, "slot")
}

var errRead = errors.New("read failed")

type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errRead }

func checkFile(t *testing.T, path, want string, perm os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("%s holds %q, %v; want %q", path, got, err, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != perm {
		t.Errorf("%s mode %v, %v; want %v", path, fi.Mode().Perm(), err, perm)
	}
}

func checkOnly(t *testing.T, dir, name string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Name() != name {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v; want only %s", dir, names, name)
	}
}
