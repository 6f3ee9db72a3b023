package relaystore

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/storetest"
)

var t0 = time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC)

// seed makes agents.db and queue.db in dir, as a first run leaves them,
// and the marker listing them.
func seed(t *testing.T, dir string) *Guard {
	t.Helper()
	for _, name := range []string{"agents.db", "queue.db"} {
		db, err := store.Open(filepath.Join(dir, name), nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	g := &Guard{DataDir: dir}
	if err := g.Check(false); err != nil {
		t.Fatalf("first start: %v", err)
	}
	g.WriteMarker(Names(false), t0)
	return g
}

// TestLostStoreRefused: a store the marker lists that is then deleted or
// emptied is refused, naming it, the marker and --reinitialise; with
// Reinitialise it is not, and the marker is written afresh.
func TestLostStoreRefused(t *testing.T) {
	for name, lose := range map[string]func(path string) error{
		"deleted": os.Remove,
		"emptied": func(p string) error { return os.Truncate(p, 0) },
	} {
		dir := t.TempDir()
		seed(t, dir)
		path := filepath.Join(dir, "agents.db")
		if err := lose(path); err != nil {
			t.Fatal(err)
		}
		err := (&Guard{DataDir: dir}).Check(false)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), MarkerName) ||
			!strings.Contains(err.Error(), "--reinitialise") {
			t.Fatalf("agents.db %s: %v; want a refusal naming it, the marker and --reinitialise", name, err)
		}
		g := &Guard{DataDir: dir, Reinitialise: true}
		if err := g.Check(false); err != nil {
			t.Fatalf("agents.db %s, reinitialising: %v", name, err)
		}
		g.WriteMarker(Names(false), t0.Add(time.Hour))
		b, err := os.ReadFile(filepath.Join(dir, MarkerName))
		if err != nil || !strings.Contains(string(b), "15:00:00") {
			t.Errorf("marker after reinitialising: %s, %v; want created anew", b, err)
		}
	}
}

// TestFirstStartNeedsNoMarker: an empty data directory, and stores made
// before the marker existed, start.
func TestFirstStartNeedsNoMarker(t *testing.T) {
	if err := (&Guard{DataDir: t.TempDir()}).Check(true); err != nil {
		t.Errorf("empty directory: %v", err)
	}
}

// TestDamagedStoreRefused: a damaged bbolt file is refused with what to
// do, and a nil Guard (JetStream) writes no marker.
func TestDamagedStoreRefused(t *testing.T) {
	dir := t.TempDir()
	seed(t, dir)
	path := filepath.Join(dir, "queue.db")
	if err := storetest.GarbagePage(path); err != nil {
		t.Fatal(err)
	}
	err := (&Guard{DataDir: dir}).Check(false)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "move "+path+" aside") {
		t.Fatalf("damaged queue.db: %v; want a refusal saying to move it aside", err)
	}
	var g *Guard
	g.WriteMarker(Names(true), t0) // must not panic
}

// TestBrokerFixNamesTheFixOfTheStore: a broker that cannot load mqtt.db
// names --reinitialise only where the store guard runs; a relay on
// JetStream refuses that flag, so it is told to start again once the
// file is moved aside. A listener's error is returned as it is.
func TestBrokerFixNamesTheFixOfTheStore(t *testing.T) {
	bad := errors.New("decoding a stored client: unexpected end of JSON input")
	bolt := BrokerFix("/d/mqtt.db", true, bad).Error()
	js := BrokerFix("/d/mqtt.db", false, bad).Error()
	if !strings.Contains(bolt, "--reinitialise") || !strings.Contains(bolt, "move /d/mqtt.db aside") {
		t.Errorf("on bolt: %s", bolt)
	}
	if strings.Contains(js, "--reinitialise") || !strings.Contains(js, "move /d/mqtt.db aside") || !strings.Contains(js, "start the relay again without it") {
		t.Errorf("on JetStream: %s", js)
	}
	for _, err := range []error{BrokerFix("/d/mqtt.db", true, bad), BrokerFix("/d/mqtt.db", false, bad)} {
		if !errors.Is(err, ErrRefused) || !errors.Is(err, bad) {
			t.Errorf("%v: want ErrRefused wrapping the cause", err)
		}
	}
	listen := &net.OpError{Op: "listen", Net: "tcp", Err: errors.New("address already in use")}
	if err := BrokerFix("/d/mqtt.db", false, listen); err != listen {
		t.Errorf("a listener's error came back as %v", err)
	}
}
