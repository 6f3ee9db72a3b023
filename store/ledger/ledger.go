// Package ledger is the agent's idempotency ledger: a durable record, in
// bbolt, of every consequential effect the agent starts, so that no effect
// ever runs twice because a message was redelivered, a process restarted or
// a power cut struck between the effect and its bookkeeping.
//
// The rule is the Autonomy Envelope proposal's recovery rule (LIP-4, as
// narrowed in A2A issue 2323 on 2026-10-21):
//
//   - A key is reserved durably before the effect (Reserve, committed
//     before the effect starts) and completed with its receipt after it
//     (Complete).
//   - A key found reserved but not completed by a previous incarnation of
//     the process is indeterminate: the effect may or may not have happened.
//     It is refused (ErrIndeterminate), never retried automatically and
//     never released by the passage of time.
//   - Only an operator's Reconcile resolves it: completed with the
//     reconciled result, if the system of record shows the effect happened,
//     or released, if it verifiably did not, after which the same key runs
//     fresh.
//   - The reservation records a stable identifier of the effect at its
//     system of record (Reservation.EffectID, or SetEffectID as soon as it
//     is known), so that reconciliation has something to query.
//
// # Incarnations instead of leases
//
// The proposal asks a durable backend to detect a dead executor, for
// example with a lease the executor renews. Here the executor is the agent
// process itself and bbolt's file lock admits one process at a time, so a
// counter is enough: Open increments a durable incarnation number, and a
// reservation made under an older incarnation belongs to a process that is
// gone. Open marks those reservations indeterminate at once, so an operator
// listing the ledger sees them, and Reserve treats any it meets the same
// way. Open a Ledger once per process.
//
// # Transactions
//
// Every operation has a form that works inside the caller's *bbolt.Tx, so
// the agent commits a drained batch's MLS state, replay entries and ledger
// reservations in one transaction. A reservation counts only once that
// transaction committed; the caller must not start the effect before. Do
// wraps the whole sequence (reserve, commit, effect, complete) for callers
// with no transaction of their own.
//
// Completed and released entries are kept for Options.Retention after they
// were resolved (so a redelivered request gets the stored receipt back) and
// swept at Open. Reserved and indeterminate entries are never swept.
//
// # Possibly lost hand-offs
//
// The ledger also keeps the hand-offs to the application that a crash may
// have cut off with at-most-once notify (Lost, RecordLost), so that they
// are reported at every wake until an operator could see them, even when
// the wake that found them was itself killed. They are kept for
// Options.Retention and at most MaxLost of them.
package ledger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
)

// MaxKeyLen is the longest key the ledger accepts, in bytes.
const MaxKeyLen = 1024

var (
	bucketEntries = []byte("ledger")
	bucketMeta    = []byte("ledger-meta")
	keyIncarn     = []byte("incarnation")
)

// State is where a key stands.
type State uint8

const (
	// Reserved: the effect was (or is about to be) started and has not
	// completed. Under an older incarnation this reads as Indeterminate.
	Reserved State = 1
	// Completed: the effect finished and its receipt is recorded.
	Completed State = 2
	// Indeterminate: reserved by a process that died before completing;
	// waits for an operator's Reconcile.
	Indeterminate State = 3
	// Released: resolved as "the effect did not happen"; the key may be
	// reserved again.
	Released State = 4
)

func (s State) String() string {
	switch s {
	case 0:
		return "none"
	case Reserved:
		return "reserved"
	case Completed:
		return "completed"
	case Indeterminate:
		return "indeterminate"
	case Released:
		return "released"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Entry is one key's record.
type Entry struct {
	Key          string    `cbor:"1,keyasint"`
	State        State     `cbor:"2,keyasint"`
	Action       string    `cbor:"3,keyasint,omitempty"` // e.g. the purpose "action:capture"
	Counterparty string    `cbor:"4,keyasint,omitempty"` // the DID that asked for the effect
	EffectID     string    `cbor:"5,keyasint,omitempty"` // stable identifier at the system of record
	Incarnation  uint64    `cbor:"6,keyasint"`
	ReservedAt   time.Time `cbor:"7,keyasint"`
	ResolvedAt   time.Time `cbor:"8,keyasint,omitempty"` // completed, released or reconciled
	Receipt      []byte    `cbor:"9,keyasint,omitempty"`
	// Reconciled is set when an operator resolved the key; Note says how.
	Reconciled bool   `cbor:"10,keyasint,omitempty"`
	Note       string `cbor:"11,keyasint,omitempty"`
}

// Reservation describes the effect a key stands for.
type Reservation struct {
	Key          string
	Action       string
	Counterparty string
	// EffectID identifies the effect at its system of record when it is
	// known before the effect starts (often the idempotency key itself, if
	// the system accepts one). Otherwise set it with SetEffectID as soon as
	// the system returns one.
	EffectID string
}

// Options configure Open. The zero value is ready to use.
type Options struct {
	// Clock stamps entries. Nil means clock.Real.
	Clock clock.Clock
	// Retention is how long completed and released entries are kept after
	// they were resolved. Zero means 30 days.
	Retention time.Duration
}

// Ledger is the idempotency ledger in one bbolt file.
type Ledger struct {
	db          *bolt.DB
	clock       clock.Clock
	retention   time.Duration
	incarnation uint64
}

// Open prepares the ledger's buckets in db, starts a new incarnation, marks
// every reservation of an earlier incarnation indeterminate and sweeps
// resolved entries past their retention, all in one transaction.
func Open(db *bolt.DB, o *Options) (*Ledger, error) {
	if o == nil {
		o = &Options{}
	}
	l := &Ledger{db: db, clock: clock.Or(o.Clock), retention: o.Retention}
	if l.retention == 0 {
		l.retention = 30 * 24 * time.Hour
	}
	err := db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketEntries); err != nil {
			return err
		}
		if v := meta.Get(keyIncarn); len(v) == 8 {
			l.incarnation = binary.BigEndian.Uint64(v)
		}
		l.incarnation++
		if err := meta.Put(keyIncarn, binary.BigEndian.AppendUint64(nil, l.incarnation)); err != nil {
			return err
		}
		if err := l.recoverLocked(tx); err != nil {
			return err
		}
		return sweepLost(tx, l.clock.Now().Add(-l.retention))
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: opening: %w", err)
	}
	return l, nil
}

// recoverLocked marks stale reservations indeterminate and sweeps resolved
// entries past retention. It runs inside Open's transaction.
func (l *Ledger) recoverLocked(tx *bolt.Tx) error {
	b := tx.Bucket(bucketEntries)
	cutoff := l.clock.Now().Add(-l.retention)
	var del [][]byte
	var put []Entry
	err := b.ForEach(func(k, v []byte) error {
		e, err := decode(v)
		if err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
		switch {
		case e.State == Reserved && e.Incarnation < l.incarnation:
			e.State = Indeterminate
			put = append(put, e)
		case (e.State == Completed || e.State == Released) && e.ResolvedAt.Before(cutoff):
			del = append(del, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range del {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	for _, e := range put {
		if err := write(b, e); err != nil {
			return err
		}
	}
	return nil
}

// Incarnation returns the number of this process's incarnation.
func (l *Ledger) Incarnation() uint64 { return l.incarnation }

// DB returns the bbolt file the ledger lives in, for callers that open their
// own transactions.
func (l *Ledger) DB() *bolt.DB { return l.db }

// Reserve records, in tx, that the effect r.Key stands for is about to run.
// The caller commits tx before it starts the effect.
//
// It returns a *KeyError wrapping ErrCompleted (the entry carries the
// stored receipt), ErrInFlight, ErrIndeterminate or ErrBadKey when the key
// must not run. A released key is reserved afresh.
func (l *Ledger) Reserve(tx *bolt.Tx, r Reservation) error {
	b, e, err := l.lookup(tx, "reserve", r.Key)
	if err != nil && !isNotFound(err) {
		return err
	}
	switch e.State {
	case Completed:
		return &KeyError{Op: "reserve", Entry: e, Err: ErrCompleted}
	case Indeterminate:
		return &KeyError{Op: "reserve", Entry: e, Err: ErrIndeterminate}
	case Reserved:
		if e.Incarnation == l.incarnation {
			return &KeyError{Op: "reserve", Entry: e, Err: ErrInFlight}
		}
		e.State = Indeterminate
		if err := write(b, e); err != nil {
			return err
		}
		return &KeyError{Op: "reserve", Entry: e, Err: ErrIndeterminate}
	}
	return write(b, Entry{
		Key:          r.Key,
		State:        Reserved,
		Action:       r.Action,
		Counterparty: r.Counterparty,
		EffectID:     r.EffectID,
		Incarnation:  l.incarnation,
		ReservedAt:   l.clock.Now().UTC(),
	})
}

// SetEffectID records, in tx, the identifier the system of record gave the
// effect of a key this incarnation reserved. Call it as soon as the
// identifier is known. It returns a *KeyError wrapping ErrNotReserved for a
// key that is not in flight.
func (l *Ledger) SetEffectID(tx *bolt.Tx, key, effectID string) error {
	b, e, err := l.inFlight(tx, "set-effect-id", key)
	if err != nil {
		return err
	}
	e.EffectID = effectID
	return write(b, e)
}

// Complete records, in tx, that the effect of a key this incarnation
// reserved finished, with its receipt (the handler's outcome, which may
// itself say the effect failed). effectID, when not empty, replaces the
// recorded one. It returns a *KeyError wrapping ErrNotReserved for a key
// that is not in flight, and ErrIndeterminate for one a previous
// incarnation left behind.
func (l *Ledger) Complete(tx *bolt.Tx, key string, receipt []byte, effectID string) error {
	b, e, err := l.inFlight(tx, "complete", key)
	if err != nil {
		return err
	}
	e.State = Completed
	e.Receipt = append([]byte(nil), receipt...)
	if effectID != "" {
		e.EffectID = effectID
	}
	e.ResolvedAt = l.clock.Now().UTC()
	return write(b, e)
}

// Release records, in tx, that the effect of a key this incarnation reserved
// verifiably did not happen (for example the handler program could not be
// started), so the key may be reserved again. It returns a *KeyError
// wrapping ErrNotReserved for a key that is not in flight.
func (l *Ledger) Release(tx *bolt.Tx, key, note string) error {
	b, e, err := l.inFlight(tx, "release", key)
	if err != nil {
		return err
	}
	e.State = Released
	e.Note = note
	e.ResolvedAt = l.clock.Now().UTC()
	return write(b, e)
}

// Abandon records, in tx, that this incarnation cannot tell whether the
// effect of a key it reserved happened (the hand-off timed out, or the
// owner's halt cut it off midway): the key becomes indeterminate at once
// instead of at the next restart. It returns a *KeyError wrapping
// ErrNotReserved for a key that is not in flight.
func (l *Ledger) Abandon(tx *bolt.Tx, key, note string) error {
	b, e, err := l.inFlight(tx, "abandon", key)
	if err != nil {
		return err
	}
	e.State = Indeterminate
	e.Note = note
	return write(b, e)
}

// Resolution is an operator's verdict on an indeterminate key, reached by
// querying the effect's system of record.
type Resolution struct {
	// Happened says the effect took place: the key becomes Completed with
	// Receipt. Otherwise it is Released and may run afresh.
	Happened bool
	Receipt  []byte
	EffectID string // replaces the recorded one when not empty
	Note     string // who reconciled, and how; kept in the entry
}

// Reconcile resolves an indeterminate key in tx. It is the only way such a
// key leaves that state. It returns a *KeyError wrapping ErrNotFound for an
// unknown key, ErrInFlight for a key this incarnation is still running, and
// ErrNotReserved for a key that is already resolved.
func (l *Ledger) Reconcile(tx *bolt.Tx, key string, r Resolution) error {
	b, e, err := l.lookup(tx, "reconcile", key)
	if err != nil {
		return err
	}
	switch {
	case e.State == Reserved && e.Incarnation == l.incarnation:
		return &KeyError{Op: "reconcile", Entry: e, Err: ErrInFlight}
	case e.State != Reserved && e.State != Indeterminate:
		return &KeyError{Op: "reconcile", Entry: e, Err: ErrNotReserved}
	}
	e.State = Released
	if r.Happened {
		e.State = Completed
		e.Receipt = append([]byte(nil), r.Receipt...)
	}
	if r.EffectID != "" {
		e.EffectID = r.EffectID
	}
	e.Reconciled = true
	e.Note = r.Note
	e.ResolvedAt = l.clock.Now().UTC()
	return write(b, e)
}

// Get returns the entry of key as tx sees it, with a stale reservation
// reported as Indeterminate. It returns a *KeyError wrapping ErrNotFound for
// an unknown key.
func (l *Ledger) Get(tx *bolt.Tx, key string) (Entry, error) {
	_, e, err := l.lookup(tx, "get", key)
	return l.view(e), err
}

// List calls fn for every entry in key order (stale reservations reported
// as Indeterminate) until fn returns false.
func (l *Ledger) List(tx *bolt.Tx, fn func(Entry) bool) error {
	b := tx.Bucket(bucketEntries)
	if b == nil {
		return fmt.Errorf("ledger: bucket missing (was Open called?)")
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		e, err := decode(v)
		if err != nil {
			return fmt.Errorf("ledger: key %q: %w", k, err)
		}
		if !fn(l.view(e)) {
			return nil
		}
	}
	return nil
}

// Do runs effect under key with transactions of its own: it reserves the
// key and commits, runs effect, then completes the key with the receipt
// effect returns. When effect returns an error wrapping ErrNotStarted the
// key is released instead; any other error from effect leaves the key
// reserved, to become indeterminate after a restart, because the effect may
// have happened. A key that must not run returns Reserve's *KeyError.
func (l *Ledger) Do(ctx context.Context, r Reservation, effect func(ctx context.Context) (receipt []byte, effectID string, err error)) (Entry, error) {
	if err := l.db.Update(func(tx *bolt.Tx) error { return l.Reserve(tx, r) }); err != nil {
		return Entry{}, err
	}
	receipt, effectID, err := effect(ctx)
	if err != nil {
		if isNotStarted(err) {
			if rerr := l.db.Update(func(tx *bolt.Tx) error { return l.Release(tx, r.Key, err.Error()) }); rerr != nil {
				return Entry{}, rerr
			}
		}
		return Entry{}, err
	}
	var e Entry
	err = l.db.Update(func(tx *bolt.Tx) error {
		if err := l.Complete(tx, r.Key, receipt, effectID); err != nil {
			return err
		}
		var gerr error
		e, gerr = l.Get(tx, r.Key)
		return gerr
	})
	return e, err
}

// lookup returns the bucket and the entry of key (viewed: a stale
// reservation reads Indeterminate). For an unknown key it returns the
// bucket, a zero Entry carrying the key and a *KeyError wrapping
// ErrNotFound.
func (l *Ledger) lookup(tx *bolt.Tx, op, key string) (*bolt.Bucket, Entry, error) {
	if key == "" || len(key) > MaxKeyLen {
		return nil, Entry{Key: key}, &KeyError{Op: op, Entry: Entry{Key: key}, Err: ErrBadKey}
	}
	b := tx.Bucket(bucketEntries)
	if b == nil {
		return nil, Entry{}, fmt.Errorf("ledger: bucket missing (was Open called?)")
	}
	v := b.Get([]byte(key))
	if v == nil {
		return b, Entry{Key: key}, &KeyError{Op: op, Entry: Entry{Key: key}, Err: ErrNotFound}
	}
	e, err := decode(v)
	if err != nil {
		return nil, Entry{}, fmt.Errorf("ledger: key %q: %w", key, err)
	}
	return b, e, nil
}

// inFlight returns the entry of a key this incarnation reserved.
func (l *Ledger) inFlight(tx *bolt.Tx, op, key string) (*bolt.Bucket, Entry, error) {
	b, e, err := l.lookup(tx, op, key)
	if err != nil {
		if isNotFound(err) {
			return nil, e, &KeyError{Op: op, Entry: e, Err: ErrNotReserved}
		}
		return nil, e, err
	}
	switch {
	case e.State == Reserved && e.Incarnation == l.incarnation:
		return b, e, nil
	case e.State == Reserved || e.State == Indeterminate:
		return nil, l.view(e), &KeyError{Op: op, Entry: l.view(e), Err: ErrIndeterminate}
	}
	return nil, e, &KeyError{Op: op, Entry: e, Err: ErrNotReserved}
}

// view reports a reservation of an earlier incarnation as Indeterminate.
func (l *Ledger) view(e Entry) Entry {
	if e.State == Reserved && e.Incarnation < l.incarnation {
		e.State = Indeterminate
	}
	return e
}

func isNotFound(err error) bool   { return errors.Is(err, ErrNotFound) }
func isNotStarted(err error) bool { return errors.Is(err, ErrNotStarted) }

// encMode keeps timestamps to the microsecond (the default is whole
// seconds).
var encMode, _ = cbor.EncOptions{Time: cbor.TimeUnixMicro}.EncMode()

func write(b *bolt.Bucket, e Entry) error {
	v, err := encMode.Marshal(e)
	if err != nil {
		return fmt.Errorf("ledger: encoding entry: %w", err)
	}
	return b.Put([]byte(e.Key), v)
}

func decode(v []byte) (Entry, error) {
	var e Entry
	if err := cbor.Unmarshal(v, &e); err != nil {
		return Entry{}, fmt.Errorf("decoding entry: %w", err)
	}
	return e, nil
}
