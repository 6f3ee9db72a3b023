//go:build integration

package faults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLostStore: a store deleted or emptied while the relay was stopped
// (the queue of either engine, agents.db, mqtt.db) is refused at start,
// exit status 65, naming the file, the store marker and --reinitialise,
// and nothing is created in its place; with --reinitialise the relay
// starts empty, as asked, and says so.
func TestLostStore(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			f := newFixture(t, engine, t.TempDir())
			f.fill(t, 50, 10, 100)
			snap := snapshot(t, f.dir)
			queue := "queue.db"
			if engine == "log" {
				queue = "queue.log"
			}
			for _, c := range lossesOf(queue) {
				t.Run(c.name, func(t *testing.T) {
					restore(t, snap, f.dir)
					if err := c.lose(f.dir); err != nil {
						t.Fatal(err)
					}
					r, exit, log := tryStart(t, f)
					if r != nil {
						r.Kill()
						t.Fatalf("the relay started on a lost %s", c.file)
					}
					for _, want := range []string{filepath.Join(f.dir, c.file), "stores.marker", "--reinitialise"} {
						if !strings.Contains(log, want) {
							t.Errorf("the refusal does not name %s:\n%s", want, log)
						}
					}
					if exit != 65 {
						t.Errorf("exit status %d, want 65", exit)
					}
					r, _, log = tryStart(t, f, "--reinitialise")
					if r == nil {
						t.Fatalf("--reinitialise did not start the relay:\n%s", log)
					}
					defer r.Kill()
					if !strings.Contains(r.Log(), "starting with empty stores as asked") {
						t.Errorf("--reinitialise did not say what it did:\n%s", r.Log())
					}
				})
			}
		})
	}
}

// loss is one way a store is lost while the relay is stopped.
type loss struct {
	name, file string
	lose       func(dir string) error
}

// lossesOf returns the losses of the queue (queue.db or queue.log),
// agents.db and mqtt.db.
func lossesOf(queue string) []loss {
	remove := func(name string) func(string) error {
		return func(dir string) error { return os.RemoveAll(filepath.Join(dir, name)) }
	}
	empty := func(name string) func(string) error {
		return func(dir string) error {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.IsDir() { // the record log: its files deleted
				ms, _ := filepath.Glob(filepath.Join(p, "*"))
				for _, m := range ms {
					if err := os.Remove(m); err != nil {
						return err
					}
				}
				return nil
			}
			return os.Truncate(p, 0)
		}
	}
	var out []loss
	for _, name := range []string{queue, "agents.db", "mqtt.db"} {
		out = append(out, loss{name + " deleted", name, remove(name)}, loss{name + " emptied", name, empty(name)})
	}
	if queue == "queue.log" {
		out = append(out, loss{"queue.log segments cut to zero length", queue, func(dir string) error {
			ms, _ := filepath.Glob(filepath.Join(dir, queue, "*.log"))
			for _, m := range ms {
				if err := os.Truncate(m, 0); err != nil {
					return err
				}
			}
			return nil
		}})
	}
	return out
}
