package mqtttest

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/store/replay"
)

// State is a device's bbolt file with the replay cache and the ledger
// opened in it, as the agent has them.
type State struct {
	Path   string
	DB     *bolt.DB
	Replay *replay.Cache
	Ledger *ledger.Ledger
}

// OpenState opens (creating) the device state at path. Each open is a new
// incarnation of the ledger, as after a reboot. It is closed at the end of
// the test unless closed before.
func OpenState(t testing.TB, path string, c clock.Clock) *State {
	t.Helper()
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rc, err := replay.Open(db, &replay.Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(db, &ledger.Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	return &State{Path: path, DB: db, Replay: rc, Ledger: l}
}

// Close closes the bbolt file.
func (s *State) Close() error { return s.DB.Close() }
