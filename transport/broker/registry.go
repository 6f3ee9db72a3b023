package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
)

// bucketNames holds the registry: device name → DID (its string form).
var bucketNames = []byte("device-names")

// ErrNameTaken is returned (wrapped) when a DID connects under a device
// name that is registered to another DID.
var ErrNameTaken = errors.New("device name registered to another DID")

// registry binds device names (MQTT client ids and topic levels) to the
// DIDs of the devices that own them. Names given in Config.Devices are
// fixed. Any other name is pinned by the first authenticated connection
// that uses it (trust on first use) unless Config.Enrollment.Closed is set,
// and from then on only that DID may connect under it. The pins live in
// DataDir/mqtt-devices.db (in memory without a DataDir), apart from
// mochi's mqtt.db, which mochi's storage hook holds open.
type registry struct {
	log    *slog.Logger
	fixed  map[string]did.DID
	closed bool
	db     *bbolt.DB // nil: pins in mem

	mu sync.Mutex
	// mu guards mem.
	mem map[string]string
}

func openRegistry(path string, fixed map[string]did.DID, closed bool, log *slog.Logger) (*registry, error) {
	r := &registry{log: log, fixed: fixed, closed: closed, mem: map[string]string{}}
	for name := range fixed {
		if err := checkName(name); err != nil {
			return nil, fmt.Errorf("broker: device name %w", err)
		}
	}
	if path == "" {
		return r, nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("broker: device registry: %w", err)
	}
	r.db = db
	return r, nil
}

func (r *registry) close() error {
	if r.db == nil {
		return nil
	}
	return r.db.Close()
}

// lookup returns the DID name is bound to.
func (r *registry) lookup(name string) (did.DID, bool, error) {
	if d, ok := r.fixed[name]; ok {
		return d, true, nil
	}
	var s string
	if r.db == nil {
		r.mu.Lock()
		s = r.mem[name]
		r.mu.Unlock()
	} else {
		err := r.db.View(func(tx *bbolt.Tx) error {
			if b := tx.Bucket(bucketNames); b != nil {
				s = string(b.Get([]byte(name)))
			}
			return nil
		})
		if err != nil {
			return did.DID{}, false, err
		}
	}
	if s == "" {
		return did.DID{}, false, nil
	}
	d, err := did.Parse(s)
	return d, err == nil, err
}

// bind allows d to connect as name, pinning name to d if it is free and
// enrolment is open.
func (r *registry) bind(name string, d did.DID) error {
	if f, ok := r.fixed[name]; ok {
		if f != d {
			return fmt.Errorf("%w: %q belongs to %s, not %s", ErrNameTaken, name, f, d)
		}
		return nil
	}
	if r.db == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.pin(name, d, r.mem[name], r.memOwned(d), func() error { r.mem[name] = d.String(); return nil })
	}
	return r.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketNames)
		if err != nil {
			return err
		}
		return r.pin(name, d, string(b.Get([]byte(name))), owned(b, d), func() error { return b.Put([]byte(name), []byte(d.String())) })
	})
}

// memOwned returns the name d owns in mem, "" for none (r.mu held).
func (r *registry) memOwned(d did.DID) string {
	for n, s := range r.mem {
		if s == d.String() {
			return n
		}
	}
	return ""
}

// owned returns the name d owns in b, "" for none.
func owned(b *bbolt.Bucket, d did.DID) string {
	var name string
	b.ForEach(func(k, v []byte) error {
		if string(v) == d.String() {
			name = string(k)
		}
		return nil
	})
	return name
}

// pin decides on a connection of d as name, cur being name's pin ("" for
// none) and mine the name d owns already, and calls put to record a new
// pin. A DID owns one name: a device has one.
func (r *registry) pin(name string, d did.DID, cur, mine string, put func() error) error {
	switch {
	case cur == d.String():
		return nil
	case cur != "":
		return fmt.Errorf("%w: %q belongs to %s, not %s (remove the pin from the broker's registry if the device was replaced)", ErrNameTaken, name, cur, d)
	case r.closed:
		return fmt.Errorf("device name %q is not registered and enrolment is closed", name)
	case mine != "":
		return fmt.Errorf("%s owns the device name %q already and may not take %q too (an operator missing from --operator?)", d, mine, name)
	}
	if err := put(); err != nil {
		return err
	}
	r.log.Info("device name registered on first connection", "name", name, "did", d)
	return nil
}

// repin moves name from old to next (a key handover). Names fixed in
// Config.Devices do not move.
func (r *registry) repin(name string, old, next did.DID) error {
	if _, ok := r.fixed[name]; ok {
		return fmt.Errorf("%w: %q is fixed to %s by the devices file", ErrNameTaken, name, old)
	}
	if r.db == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.mem[name] != old.String() {
			return fmt.Errorf("%w: %q moved meanwhile", ErrNameTaken, name)
		}
		r.mem[name] = next.String()
		return nil
	}
	return r.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketNames)
		if b == nil || string(b.Get([]byte(name))) != old.String() {
			return fmt.Errorf("%w: %q moved meanwhile", ErrNameTaken, name)
		}
		return b.Put([]byte(name), []byte(next.String()))
	})
}
