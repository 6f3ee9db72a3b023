package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/wake"
)

// TestStoreMustBePrivate: the agent refuses to run on a store file that
// others may read, or in a directory others may write, naming the path,
// its mode and the fix; the layouts store.Open and the package make run.
func TestStoreMustBePrivate(t *testing.T) {
	tests := []struct {
		name      string
		file, dir os.FileMode // 0: as store.Open makes them (0600, 0700)
		bad       string      // the path named in the error: "file" or "dir"; "" runs
		wantMode  string
	}{
		{"as store.Open makes them", 0, 0, "", ""},
		{"the package's state directory", 0o600, 0o750, "", ""},
		{"file readable by all", 0o644, 0, "file", "0644"},
		{"file readable by the group", 0o640, 0o750, "file", "0640"},
		{"file writable by others", 0o602, 0, "file", "0602"},
		{"directory writable by the group", 0, 0o770, "dir", "0770"},
		{"directory writable by all", 0, 0o777, "dir", "0777"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "agent")
			path := filepath.Join(dir, runtime.DBFile)
			db, err := store.Open(path, nil) // the store a previous run left
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			if tt.file != 0 {
				chmod(t, path, tt.file)
			}
			if tt.dir != 0 {
				chmod(t, dir, tt.dir)
			}
			a, err := runtime.New(runtime.Config{PipelineConfig: runtime.PipelineConfig{Key: runtimetest.Key(t, 8)}, Store: runtime.Store{DataDir: dir}, Relay: runtime.Relay{URL: "http://127.0.0.1:1"}, Schedule: runtime.Schedule{Mode: wake.HourlyWake}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // Run opens the store, then ends at once
			err = a.Run(ctx)
			if tt.bad == "" {
				if err != nil {
					t.Errorf("Run = %v, want the store opened", err)
				}
				return
			}
			named := path
			if tt.bad == "dir" {
				named = dir
			}
			if !errors.Is(err, runtime.ErrNotPrivate) || !strings.Contains(err.Error(), named+" has mode "+tt.wantMode) || !strings.Contains(err.Error(), "chmod") {
				t.Errorf("Run = %v, want ErrNotPrivate naming %s, mode %s and the chmod that fixes it", err, named, tt.wantMode)
			}
		})
	}
}

func chmod(t *testing.T, path string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(path, 0o700) }) // so that TempDir's cleanup can remove it
}
