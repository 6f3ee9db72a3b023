package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/storetest"
	"github.com/torpor-dev/torpor/wake"
)

// guarded is an agent configuration with a key file, so that the agent
// keeps its store marker next to it.
type guarded struct {
	t      *testing.T
	cfg    runtime.Config
	db     string
	marker string
}

func newGuarded(t *testing.T) *guarded {
	dir := t.TempDir()
	key := runtimetest.Key(t, 8)
	keyFile := filepath.Join(dir, "keys", "agent.key")
	if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := did.SaveKey(keyFile, key, false); err != nil {
		t.Fatal(err)
	}
	cfg := runtime.Config{PipelineConfig: runtime.PipelineConfig{Key: key}, Store: runtime.Store{
		KeyFile: keyFile,
		DataDir: filepath.Join(dir, "data"),
	},
		Relay: runtime.Relay{URL: "http://127.0.0.1:1"}, Schedule: runtime.Schedule{Mode: wake.HourlyWake}}
	return &guarded{t: t, cfg: cfg, db: filepath.Join(cfg.Store.DataDir, runtime.DBFile), marker: keyFile + runtime.MarkerSuffix}
}

// run runs the agent until it opened its store (the context is already
// cancelled) and returns Run's error.
func (g *guarded) run() error {
	g.t.Helper()
	a, err := runtime.New(g.cfg)
	if err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return a.Run(ctx)
}

// put writes a record into the store, as a run would.
func (g *guarded) put() {
	g.t.Helper()
	db, err := store.Open(g.db, nil)
	if err != nil {
		g.t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("test-records"))
		if err != nil {
			return err
		}
		for i := range 300 {
			if err := b.Put([]byte{byte(i >> 8), byte(i)}, make([]byte, 64)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		g.t.Fatal(err)
	}
}

// TestFirstRunWritesTheStoreMarker: the first run makes the store and the
// marker next to the key; later runs use both.
func TestFirstRunWritesTheStoreMarker(t *testing.T) {
	g := newGuarded(t)
	if err := g.run(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	b, err := os.ReadFile(g.marker)
	if err != nil || !strings.Contains(string(b), g.db) {
		t.Fatalf("store marker %s: %q, %v; want it naming %s", g.marker, b, err, g.db)
	}
	if err := g.run(); err != nil {
		t.Fatalf("second run: %v", err)
	}
}

// TestLostStoreIsRefused: a missing or zero-length store after the device
// ran before is refused with ErrStoreRefused naming the file, the marker
// and --reinitialise, and nothing is created; with Reinitialise the agent
// makes a new store.
func TestLostStoreIsRefused(t *testing.T) {
	for _, lose := range []string{"missing", "empty"} {
		t.Run(lose, func(t *testing.T) {
			g := newGuarded(t)
			if err := g.run(); err != nil {
				t.Fatal(err)
			}
			if lose == "missing" {
				os.Remove(g.db)
			} else {
				os.Truncate(g.db, 0)
			}
			err := g.run()
			if !errors.Is(err, runtime.ErrStoreRefused) || !strings.Contains(err.Error(), g.db) ||
				!strings.Contains(err.Error(), g.marker) || !strings.Contains(err.Error(), "--reinitialise") {
				t.Fatalf("Run on a %s store: %v; want ErrStoreRefused naming %s, %s and --reinitialise", lose, err, g.db, g.marker)
			}
			if fi, err := os.Stat(g.db); lose == "missing" && err == nil || lose == "empty" && (err != nil || fi.Size() != 0) {
				t.Fatalf("the refused run changed the store: %v, %v", fi, err)
			}
			g.cfg.Store.Reinitialise = true
			if err := g.run(); err != nil {
				t.Fatalf("Run with Reinitialise: %v", err)
			}
			if fi, err := os.Stat(g.db); err != nil || fi.Size() == 0 {
				t.Fatalf("no new store after Reinitialise: %v", err)
			}
		})
	}
}

// TestCorruptStoreIsRefused: each way of damaging agent.db makes Run return
// ErrStoreRefused wrapping *store.CorruptError, with the fix, instead of
// panicking; Reinitialise does not open a damaged store either.
func TestCorruptStoreIsRefused(t *testing.T) {
	for _, d := range storetest.Damages {
		t.Run(d.Name, func(t *testing.T) {
			g := newGuarded(t)
			if err := g.run(); err != nil {
				t.Fatal(err)
			}
			g.put()
			if err := d.Do(g.db); err != nil {
				t.Fatal(err)
			}
			for _, reinit := range []bool{false, true} {
				g.cfg.Store.Reinitialise = reinit
				err := g.run()
				var ce *store.CorruptError
				if !errors.Is(err, runtime.ErrStoreRefused) || !errors.As(err, &ce) || !strings.Contains(err.Error(), "move "+g.db+" aside") {
					t.Fatalf("Run (reinitialise %v) on a damaged store: %v; want ErrStoreRefused, a CorruptError and the fix", reinit, err)
				}
			}
		})
	}
}

// TestMarkerWrittenForAnExistingStore: an agent upgraded from a version
// without markers writes the marker at its next start, after which a lost
// store is refused.
func TestMarkerWrittenForAnExistingStore(t *testing.T) {
	g := newGuarded(t)
	if err := g.run(); err != nil {
		t.Fatal(err)
	}
	os.Remove(g.marker) // as a version without markers left it
	if err := g.run(); err != nil {
		t.Fatalf("start on an existing store without a marker: %v", err)
	}
	if _, err := os.Stat(g.marker); err != nil {
		t.Fatalf("no marker after the start: %v", err)
	}
	os.Remove(g.db)
	if err := g.run(); !errors.Is(err, runtime.ErrStoreRefused) {
		t.Fatalf("Run on a lost store after the upgrade = %v, want ErrStoreRefused", err)
	}
}

// TestTornFirstStartIsMadeAnew: power lost during the device's very first
// start leaves agent.db as 16 KiB of zeros (seen in the arm64 VM's power
// cuts, test/qemu TestUpdatePowerCut) with the marker the agent wrote
// before making it, which says creating. The next start moves the file
// aside, with a warning, and makes the store anew instead of refusing to
// run for ever (exit 65, which the unit does not restart). The same file
// is refused when the marker says the store was made, or when there is
// no marker (a store of a version without markers).
func TestTornFirstStartIsMadeAnew(t *testing.T) {
	torn := make([]byte, 16<<10)
	for _, tc := range []struct {
		name, marker string
		anew         bool
	}{
		{"creating", `{"store":"x","created":"2026-12-05T00:00:00Z","creating":true}`, true},
		{"created", `{"store":"x","created":"2026-12-05T00:00:00Z"}`, false},
		{"no marker", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGuarded(t)
			var log strings.Builder
			g.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
			os.MkdirAll(filepath.Dir(g.db), 0o700)
			if err := os.WriteFile(g.db, torn, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.marker != "" {
				os.WriteFile(g.marker, []byte(tc.marker), 0o600)
			}
			err := g.run()
			if !tc.anew {
				if !errors.Is(err, runtime.ErrStoreRefused) {
					t.Fatalf("Run = %v; want ErrStoreRefused", err)
				}
				if b, _ := os.ReadFile(g.db); !bytes.Equal(b, torn) {
					t.Fatal("the refused store was changed")
				}
				return
			}
			if err != nil {
				t.Fatalf("Run after a torn first start = %v; want the store made anew", err)
			}
			aside, _ := filepath.Glob(g.db + ".torn-*")
			if len(aside) != 1 {
				t.Fatalf("moved aside: %v; want one file", aside)
			}
			if b, _ := os.ReadFile(aside[0]); !bytes.Equal(b, torn) {
				t.Fatal("the file moved aside is not the torn store")
			}
			if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), aside[0]) {
				t.Errorf("log:\n%s\nwant a warning naming %s", log.String(), aside[0])
			}
			if b, _ := os.ReadFile(g.marker); strings.Contains(string(b), `"creating"`) {
				t.Errorf("marker after the start = %s; want it no longer creating", b)
			}
			if err := g.run(); err != nil {
				t.Fatalf("the next run: %v", err)
			}
		})
	}
}

// TestFirstStartMarksTheStoreCreating: the marker says creating from
// before the store is made until the agent opened it. A first start that
// made the store but stopped before the end of its opening (here: the
// data directory is writable by all, which the agent refuses once the
// file is there) leaves the marker saying creating; the next start, on
// a directory put right, leaves it saying created.
func TestFirstStartMarksTheStoreCreating(t *testing.T) {
	g := newGuarded(t)
	os.MkdirAll(g.cfg.Store.DataDir, 0o700)
	os.Chmod(g.cfg.Store.DataDir, 0o777)
	if err := g.run(); err == nil {
		t.Fatal("Run opened a store in a directory writable by all")
	}
	if b, _ := os.ReadFile(g.marker); !strings.Contains(string(b), `"creating":true`) {
		t.Fatalf("marker after a first start that stopped while opening the store: %s; want creating", b)
	}
	os.Chmod(g.cfg.Store.DataDir, 0o700)
	if err := g.run(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(g.marker); strings.Contains(string(b), `"creating"`) {
		t.Fatalf("marker after the store was opened: %s; want created", b)
	}
}
