//go:build linux

package diskspace

import (
	"path/filepath"
	"testing"
)

// TestOf reads this machine's file system: a temporary directory's has a
// size and no more free than that; a directory that is not there cannot
// be read.
func TestOf(t *testing.T) {
	dir := t.TempDir()
	free, total, ok := Of(dir)
	if !ok || total == 0 || free > total {
		t.Fatalf("Of(%s) = %d free, %d total, %v", dir, free, total, ok)
	}
	if _, _, ok := Of(filepath.Join(dir, "absent")); ok {
		t.Error("Of of an absent directory is ok")
	}
	if _, _, ok := Of(""); ok {
		t.Error(`Of("") is ok`)
	}
}
