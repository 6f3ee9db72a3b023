package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/store"
)

// ErrStoreRefused is wrapped by Run's error when the agent refuses to run
// on its store: the file is corrupt (a *store.CorruptError is wrapped too),
// or it is missing or empty although the device ran before (the store
// marker says so) and Config.Store.Reinitialise is not set. Running on would
// either crash at every start or start with an empty replay cache,
// command-sequence table, ledger and halt, under which captured messages
// and operator commands pass their checks again. The command's exit status
// for it tells the service manager not to restart (packaging/systemd).
var ErrStoreRefused = errors.New("runtime: refusing to run on the agent's store")

// MarkerSuffix is appended to the key file's name to make the store
// marker's: a small JSON file, next to the key and outside the data
// directory's bbolt file, written once the store was first opened. Its
// presence says the device has run before.
const MarkerSuffix = ".store"

// marker is the store marker's content. Creating is set in the marker
// written just before a new store is made, and cleared once it opened:
// a store left damaged with a marker that still says creating was cut
// off in its making (power lost during the device's first start) and
// held nothing yet.
type marker struct {
	Store    string    `json:"store"`
	Created  time.Time `json:"created"`
	Creating bool      `json:"creating,omitempty"`
}

// markerPath is the store marker's path; "" without a key file (no
// marker is kept).
func (c *Config) markerPath() string {
	if c.Store.KeyFile == "" {
		return ""
	}
	return c.Store.KeyFile + MarkerSuffix
}

// guardStore refuses a missing or empty store that the marker says
// existed, unless Reinitialise. It reports whether a new store will be
// made; before one is, it writes the marker that says so (creating).
func (a *Agent) guardStore() (fresh bool, err error) {
	fresh, err = a.checkStore()
	if fresh && err == nil {
		a.writeMarkerState(true)
	}
	return fresh, err
}

// checkStore is guardStore's judgement.
func (a *Agent) checkStore() (fresh bool, err error) {
	path := a.cfg.dbPath()
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return false, fmt.Errorf("runtime: %w", err)
	case fi.Size() > 0:
		return false, nil
	}
	state := "missing"
	if err == nil {
		state = "empty (zero length)"
	}
	mp := a.cfg.markerPath()
	if mp == "" {
		return true, nil
	}
	b, err := os.ReadFile(mp)
	var m marker
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil // the first run
	case err == nil && json.Unmarshal(b, &m) == nil && m.Creating:
		return true, nil // the first run, cut off before the store was written
	case err != nil:
		return false, fmt.Errorf("%w: %s is %s and the store marker %s cannot be read: %v", ErrStoreRefused, path, state, mp, err)
	case a.cfg.Store.Reinitialise:
		a.log.Warn("reinitialising the agent's store as asked: replay cache, command sequence numbers, ledger, halt and MLS groups start empty",
			"store", path, "was", state, "marker", mp)
		return true, nil
	}
	_ = json.Unmarshal(b, &m) // what it says only helps the message
	return false, fmt.Errorf("%w: %s is %s, but this device has run before (the store marker %s says the store was created %s). "+
		"An empty store would accept captured messages and operator commands again and forget a halt. "+
		"Restore %s from a backup, or start over deliberately with an empty store: run torpor-agent once with --reinitialise "+
		"(senders must then pair with the device again)", ErrStoreRefused, path, state, mp, m.Created.UTC().Format(time.RFC3339), path)
}

// openStore opens the agent's bbolt file with bbolt's consistency check;
// a damaged file is refused with what to do.
func (a *Agent) openStore() (*bolt.DB, error) {
	path := a.cfg.dbPath()
	db, err := store.Open(path, &store.Options{Check: true})
	var ce *store.CorruptError
	if errors.As(err, &ce) && a.storeBeingCreated() {
		// Cut off while it was first made: it held nothing yet. Kept
		// aside, not deleted, for whoever wants to look.
		aside := fmt.Sprintf("%s.torn-%d", path, a.clock.Now().Unix())
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("%w: %w; moving it aside: %v", ErrStoreRefused, err, rerr)
		}
		a.log.Warn("the agent's store was left damaged by its first start, cut off before the store was written (the store marker says creating); moved aside and made anew",
			"store", path, "movedTo", aside, "damage", err)
		a.writeMarkerState(true)
		db, err = store.Open(path, &store.Options{Check: true})
	}
	if errors.As(err, &ce) {
		return nil, fmt.Errorf("%w: %w. "+
			"Stop the service, move %s aside (keep it for diagnosis), then restore it from a backup, "+
			"or start over with an empty store: run torpor-agent once with --reinitialise (senders must then pair with the device again)",
			ErrStoreRefused, err, path)
	}
	return db, err
}

// storeBeingCreated reports whether the store marker says the store is
// being made (guardStore wrote it so, and the store never opened since).
func (a *Agent) storeBeingCreated() bool {
	mp := a.cfg.markerPath()
	if mp == "" {
		return false
	}
	b, err := os.ReadFile(mp)
	var m marker
	return err == nil && json.Unmarshal(b, &m) == nil && m.Creating
}

// writeMarker records that the store exists, when the marker is missing,
// says the store is being made, or the store was made afresh. A marker
// that cannot be written is logged: the agent runs, without the
// protection.
func (a *Agent) writeMarker(fresh bool) {
	mp := a.cfg.markerPath()
	if mp == "" {
		return
	}
	if _, err := os.Stat(mp); err == nil && !fresh && !a.storeBeingCreated() {
		return
	}
	a.writeMarkerState(false)
}

// writeMarkerState writes the store marker, saying whether the store is
// being made (creating) or exists.
func (a *Agent) writeMarkerState(creating bool) {
	mp := a.cfg.markerPath()
	if mp == "" {
		return
	}
	b, _ := json.Marshal(marker{Store: a.cfg.dbPath(), Created: a.clock.Now().UTC(), Creating: creating})
	if err := atomicfile.WriteFile(mp, append(b, '\n'), 0o600); err != nil {
		a.log.Warn("cannot write the store marker; a lost store would be recreated empty without notice",
			"marker", mp, "err", err)
	}
}
