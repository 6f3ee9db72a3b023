package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckLinked(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "queue.db")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := CheckLinked(f, p); err != nil {
		t.Fatalf("CheckLinked of a file in place = %v, want nil", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err = CheckLinked(f, p)
	var re *RemovedError
	if !errors.As(err, &re) || re.Path != p || !errors.Is(err, ErrRemoved) {
		t.Fatalf("CheckLinked after the directory was removed = %v, want a *RemovedError naming %s", err, p)
	}
}
