package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/store/relaystore"
	"github.com/torpor-dev/torpor/store/storetest"
)

// runOn runs the relay on the data directory dir with argv until it
// serves, then stops it; it returns what it logged and run's error (nil
// once it served).
func runOn(t *testing.T, dir string, argv ...string) (string, error) {
	t.Helper()
	r, err := startRun(t, dir, argv...)
	if err == nil {
		err = r.stop()
	}
	return r.logs.String(), err
}

// TestLostStoreRefused: once the relay ran on its data directory, a
// deleted or emptied queue (either engine) or agents.db is refused,
// naming the file, the marker and --reinitialise; with --reinitialise the
// relay starts empty, and a first start on an empty directory needs
// nothing.
func TestLostStoreRefused(t *testing.T) {
	for _, c := range []struct {
		engine, name string
		lose         func(dir string) error
		want         string
	}{
		{"bolt", "queue.db deleted", func(d string) error { return os.Remove(filepath.Join(d, "queue.db")) }, "queue.db"},
		{"bolt", "queue.db emptied", func(d string) error { return os.Truncate(filepath.Join(d, "queue.db"), 0) }, "queue.db"},
		{"bolt", "agents.db deleted", func(d string) error { return os.Remove(filepath.Join(d, "agents.db")) }, "agents.db is missing"},
		{"bolt", "mqtt.db emptied", func(d string) error { return os.Truncate(filepath.Join(d, "mqtt.db"), 0) }, "mqtt.db is missing"},
		{"log", "queue.log deleted", func(d string) error { return os.RemoveAll(filepath.Join(d, "queue.log")) }, "queue.log"},
		{"log", "queue.log emptied", func(d string) error { return removeGlob(filepath.Join(d, "queue.log", "*")) }, "queue.log"},
		{"log", "queue.log segment cut to zero", func(d string) error { return os.Truncate(filepath.Join(d, "queue.log", "0000000000000001.log"), 0) }, "queue.log"},
	} {
		t.Run(c.engine+"/"+c.name, func(t *testing.T) {
			dir := t.TempDir()
			if logs, err := runOn(t, dir, "--queue-engine", c.engine); err != nil {
				t.Fatalf("first start: %v\n%s", err, logs)
			}
			if err := c.lose(dir); err != nil {
				t.Fatal(err)
			}
			_, err := runOn(t, dir, "--queue-engine", c.engine)
			if !errors.Is(err, relaystore.ErrRefused) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), relaystore.MarkerName) || !strings.Contains(err.Error(), "--reinitialise") {
				t.Fatalf("start after the loss: %v; want a refusal naming %s, %s and --reinitialise", err, c.want, relaystore.MarkerName)
			}
			if logs, err := runOn(t, dir, "--queue-engine", c.engine, "--reinitialise"); err != nil || !strings.Contains(logs, "starting with empty stores as asked") {
				t.Fatalf("start with --reinitialise: %v\n%s", err, logs)
			}
			if logs, err := runOn(t, dir, "--queue-engine", c.engine); err != nil {
				t.Fatalf("start after --reinitialise: %v\n%s", err, logs)
			}
		})
	}
}

func removeGlob(pattern string) error {
	ms, _ := filepath.Glob(pattern)
	for _, m := range ms {
		if err := os.Remove(m); err != nil {
			return err
		}
	}
	return nil
}

// TestDamagedStoreRefused: each way of damaging queue.db (of
// --queue-engine bolt), agents.db, mqtt.db or audit.db refuses the start
// with an error that names the file and the fix, even with --reinitialise;
// bbolt's own "file size too small" too.
func TestDamagedStoreRefused(t *testing.T) {
	damages := append(storetest.Damages, storetest.Damage{Name: "cut-to-one-page", Do: func(p string) error { return os.Truncate(p, 4096) }})
	for _, file := range []string{"queue.db", "agents.db", "mqtt.db", "audit.db"} {
		for _, d := range damages {
			t.Run(file+"/"+d.Name, func(t *testing.T) {
				dir := t.TempDir()
				var engine []string
				if file == "queue.db" {
					engine = []string{"--queue-engine", "bolt"}
				}
				if logs, err := runOn(t, dir, engine...); err != nil {
					t.Fatalf("first start: %v\n%s", err, logs)
				}
				path := filepath.Join(dir, file)
				if err := d.Do(path); err != nil {
					t.Fatal(err)
				}
				for _, argv := range [][]string{engine, append(engine, "--reinitialise")} {
					_, err := runOn(t, dir, argv...)
					if !errors.Is(err, relaystore.ErrRefused) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move "+path+" aside") {
						t.Fatalf("start %v on a damaged %s: %v; want a refusal naming it and the fix", argv, file, err)
					}
				}
			})
		}
	}
}

// TestMetaFallbackLogged: a queue.db one of whose meta pages fails its
// checksum starts (bbolt takes the other page) with an error line that
// says the last commit may be lost.
func TestMetaFallbackLogged(t *testing.T) {
	dir := t.TempDir()
	if logs, err := runOn(t, dir, "--queue-engine", "bolt"); err != nil {
		t.Fatalf("first start: %v\n%s", err, logs)
	}
	if err := storetest.FlipMeta(filepath.Join(dir, "queue.db"), 0); err != nil {
		t.Fatal(err)
	}
	logs, err := runOn(t, dir, "--queue-engine", "bolt")
	if err != nil || !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "meta page 0 of "+filepath.Join(dir, "queue.db")+" fails its checksum") {
		t.Fatalf("start with a flipped meta page: %v; want it to start and log the fallback:\n%s", err, logs)
	}
}
