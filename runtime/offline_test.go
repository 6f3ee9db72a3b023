package runtime_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/storetest"
)

// TestOpenOffline: the operator's offline commands open a store the agent
// made, and refuse a missing, an empty and a corrupt one (the last with
// ErrStoreRefused).
func TestOpenOffline(t *testing.T) {
	dir := t.TempDir()
	c := runtime.Config{PipelineConfig: runtime.PipelineConfig{Key: runtimetest.Key(t, 9), Clock: clocktest.New(t0)},
		Store: runtime.Store{DataDir: dir}}
	path := filepath.Join(dir, runtime.DBFile)
	if _, _, err := runtime.OpenOffline(c); err == nil || !strings.Contains(err.Error(), "no agent store") {
		t.Fatalf("missing store: %v", err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runtime.OpenOffline(c); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty store: %v", err)
	}
	os.Remove(path)
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	p, closeFn, err := runtime.OpenOffline(c)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := p.Report(0); err != nil || r.Halt.Halted || r.LastWake != nil {
		t.Errorf("report of a new store: %+v, %v", r, err)
	}
	closeFn()
	if err := storetest.GarbagePage(path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runtime.OpenOffline(c); !errors.Is(err, runtime.ErrStoreRefused) {
		t.Fatalf("corrupt store: %v, want ErrStoreRefused", err)
	}
}
