// Package drain is the agent's validate-on-dequeue pipeline: it takes the
// records the relay queued while the device slept, in queue order, and
// decides in one bbolt transaction per batch what each one is, before
// anything acts on it (offline profile, "Validate-on-Dequeue";
// draft-chapman-a2a-mls-03 Section 8).
//
// For every record: MLS handshake parts are applied and MLS wire messages
// opened through Sessions; every Governed Object, decrypted or (where the
// configuration allows) unencrypted, goes through the six ordered receiver
// checks of package governed with the time at dequeue (the trusted time,
// see below); accepted objects are admitted to the replay cache;
// consequential ones go to the action gate; the rest are written to the
// outbox for the application.
//
// # Crash safety
//
// Per batch, ONE bbolt transaction commits the MLS state changes, the
// replay entries, the gate's holds and budget, the ledger reservations and
// the outbox. Only after it committed are the records acknowledged to the
// relay (which deletes them) and the application notified. So:
//
//   - A crash before the commit loses nothing: the relay still has every
//     record and delivers it again; nothing was admitted.
//   - A crash after the commit and before the acknowledgement makes the
//     relay deliver the batch again; every object is then a replay and is
//     drained as one. Nothing is notified twice.
//   - A crash after the commit and before (or during) the notifications:
//     see the two notify modes below.
//
// # Notify modes
//
// AtMostOnce (the default) is the profile's split path: at-least-once
// storage (the relay keeps a record until the device committed), then
// at-most-once notify. The outbox entry of each hand-off is small (ids
// only); an entry a crash leaves behind is reported as a possibly lost
// notification and dropped, never repeated. No object ever reaches a
// handler twice.
//
// AtLeastOnce keeps the whole delivery in the outbox until the handler
// accepted it, and hands it over again after a crash or a failed hand-off
// (Delivery.Attempt counts), until the object expires. The device's outbox
// is then the durable holder of the record that the profile asks to
// document: the relay's copy is deleted at acknowledgement as usual.
// Handlers must be idempotent on (issuer, object id).
//
// A hand-off that certainly did not start (the handler's error wraps
// deliver.ErrNotStarted: its program could not be started) is kept in both
// modes and handed over again at the next wake's Recover, until its object
// expires: the application never saw it, so repeating it cannot deliver it
// twice. With at-most-once notify the entry is marked in flight, in a
// transaction of its own, before each repetition: a crash during one
// leaves it reported lost, never repeated. Every failed hand-off is
// counted (Report.HandOffFailed) and described (CauseHandOff).
//
// Consequential actions never repeat in either mode: their effect runs
// under an idempotency-ledger key reserved in the batch transaction, and a
// key whose effect a crash interrupted is indeterminate until an operator
// reconciles it (store/ledger).
//
// # Trusted time
//
// With Config.Expiry the drain judges expiry by the time the agent trusts
// (runtime/trusted: NTP, a board RTC, the relay's time, never below a
// floor) rather than by the system clock, which a board without an RTC
// sets hours back at boot. Without trusted time a batch is held: nothing
// is judged, committed or acknowledged, Batch returns ErrUntrusted and the
// report counts every record deferred, with one diagnostic of cause
// CauseUntrusted saying why.
//
// # Rejections
//
// A record or object that fails is drained (acknowledged) and reported by
// cause in the Report (operator diagnostics, draft Section 8.4); it never
// blocks later records. A record that is not a JSON-RPC message submission
// (CauseOpaque) is refused and acknowledged too: no later wake would judge
// it otherwise, and left queued it would fill the queue and come back at
// every wake. Only records that may succeed later (an MLS message Sessions
// defers until its group or epoch exists) stay queued, and are reported
// every time, for at most Config.MaxDeferrals drains (one a wake): a
// record no later one unlocked by then is acknowledged and reported
// (CauseMLSUndeliverable), so that messages for groups the device never
// joined cannot hold its queue until their TTL. The count is kept in the
// agent's bbolt file (bucket drain-deferred). A store failure rolls the
// batch back and acknowledges nothing.
package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/store/ledger"
)

// NotifyMode chooses the delivery semantics of the hand-off to the
// application (see the package documentation).
type NotifyMode uint8

const (
	// AtMostOnce never hands an object over twice (the profile's split
	// path).
	AtMostOnce NotifyMode = iota
	// AtLeastOnce repeats a hand-off that a crash or failure interrupted;
	// for handlers idempotent on object id.
	AtLeastOnce
)

// ParseNotifyMode reads "at-most-once" or "at-least-once".
func ParseNotifyMode(s string) (NotifyMode, error) {
	switch s {
	case "at-most-once", "":
		return AtMostOnce, nil
	case "at-least-once":
		return AtLeastOnce, nil
	}
	return 0, fmt.Errorf("drain: notify mode %q (want at-most-once or at-least-once)", s)
}

func (m NotifyMode) String() string {
	if m == AtLeastOnce {
		return "at-least-once"
	}
	return "at-most-once"
}

// Config configures a Drainer.
type Config struct {
	// Gate is the action gate; its ledger's bbolt file is where the drain
	// keeps everything. Required.
	Gate *gate.Gate
	// Ledger is the gate's idempotency ledger. Required.
	Ledger *ledger.Ledger
	// Accept is what the drain accepts.
	Accept Accept
	// Sessions opens MLS messages; nil rejects every MLS part.
	Sessions Sessions
	// Replay binds the replay cache to a transaction. Required.
	Replay func(tx *bolt.Tx) governed.ReplayCache
	// Router hands accepted objects to the application. Required.
	Router *deliver.Router
	// Notify is the notify mode.
	Notify NotifyMode
	// MaxOutcomes is how many outcomes are kept; zero means
	// DefaultMaxOutcomes.
	MaxOutcomes int
	// Clock is the wall clock at dequeue. Nil means clock.Real.
	Clock clock.Clock
	// MaxDeferrals bounds how many drains may defer one record (an MLS
	// message for a group or epoch this agent does not have); at the
	// last it is acknowledged and reported (CauseMLSUndeliverable). Zero
	// means DefaultMaxDeferrals.
	MaxDeferrals int
	// Expiry, when set, gives the time every batch judges expiry by in
	// place of Clock (package runtime/trusted): a batch with no trusted
	// time is held (ErrUntrusted), and the time a batch judged by is
	// committed with it (the floor). Nil judges by Clock (tools that
	// assemble a pipeline without a relay, tests).
	Expiry Expiry
}

// Accept is what a Drainer accepts: from whom control objects, for
// which purposes, and how protected and long-lived objects.
type Accept struct {
	// Owner is the DID whose control objects (torpor:policy, halt,
	// resume, confirm, deny) the agent obeys; zero for none.
	Owner did.DID
	// Purposes are the purposes the agent accepts (draft Section 8.3).
	Purposes purpose.Set
	// AllowPlaintext accepts unencrypted Governed Objects (draft Section
	// 7.4). Off by default: only MLS-encrypted objects are accepted.
	AllowPlaintext bool
	// MaxLifetime is the lifetime of an object that declares no expiry;
	// zero means governed.DefaultMaxLifetime.
	MaxLifetime time.Duration
}

// Expiry is the trusted time (runtime/trusted's Clock).
type Expiry interface {
	// Trusted returns the time to judge expiry by, or an error saying why
	// there is none.
	Trusted() (time.Time, error)
	// Commit records t, a time Trusted returned, in the batch's
	// transaction.
	Commit(tx *bolt.Tx, t time.Time) error
}

// Drainer runs the pipeline. Its methods are safe for concurrent use, but
// batches are processed one at a time.
type Drainer struct {
	cfg   Config
	db    *bolt.DB
	clock clock.Clock

	run sync.Mutex // serialises batches: queue order is processing order

	mu sync.Mutex
	// mu guards all following fields.
	actCtx    context.Context
	actCancel context.CancelFunc
}

// New checks cfg and prepares the drain's buckets.
func New(cfg Config) (*Drainer, error) {
	if cfg.Gate == nil || cfg.Ledger == nil || cfg.Replay == nil || cfg.Router == nil {
		return nil, errors.New("drain: Gate, Ledger, Replay and Router are required")
	}
	if cfg.MaxOutcomes <= 0 {
		cfg.MaxOutcomes = DefaultMaxOutcomes
	}
	if cfg.MaxDeferrals <= 0 {
		cfg.MaxDeferrals = DefaultMaxDeferrals
	}
	d := &Drainer{cfg: cfg, db: cfg.Ledger.DB(), clock: clock.Or(cfg.Clock)}
	d.actCtx, d.actCancel = context.WithCancel(context.Background())
	err := d.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketOutbox, bucketOutcomes, bucketDeferred} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("drain: %w", err)
	}
	return d, nil
}

// Halt cancels every consequential effect in flight (the owner's halt
// reaches in-flight work); effects started later get a fresh context.
func (d *Drainer) Halt() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.actCancel()
	d.actCtx, d.actCancel = context.WithCancel(context.Background())
}

func (d *Drainer) actionContext() context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.actCtx
}

// Close cancels effects in flight.
func (d *Drainer) Close() { d.Halt() }

// AckFunc acknowledges records to the relay; it returns once the relay
// committed their deletion.
type AckFunc func(ctx context.Context, seqs []uint64) error

// Batch processes recs (in queue order) in one transaction, then
// acknowledges every record except the deferred ones with ack, then hands
// the accepted objects to the application and runs the allowed actions,
// and records their outcomes. A store failure rolls the batch back,
// acknowledges nothing and returns an error wrapping ErrStore. An
// acknowledgement failure is returned after the
// notifications: the batch committed, so its objects are handed over, and
// the relay delivers the records again (they are then replays).
func (d *Drainer) Batch(ctx context.Context, recs []Record, ack AckFunc) (Report, error) {
	d.run.Lock()
	defer d.run.Unlock()
	b, err := d.process(recs)
	if errors.Is(err, ErrUntrusted) {
		rep := Report{Records: len(recs), Deferred: len(recs)}
		rep.diag(recs[0].Seq, CauseUntrusted, fmt.Sprintf("%d records held from seq %d: %v", len(recs), recs[0].Seq, err))
		return rep, err
	}
	if err != nil {
		return Report{Records: len(recs)}, err
	}
	var ackErr error
	if len(b.acks) > 0 && ack != nil {
		t := d.clock.Now()
		if ackErr = ack(ctx, b.acks); ackErr != nil {
			ackErr = fmt.Errorf("drain: acknowledging %d records: %w", len(b.acks), ackErr)
		}
		b.report.Time.Ack += d.clock.Now().Sub(t)
	}
	t := d.clock.Now()
	err = d.finish(ctx, b)
	b.report.Time.Notify += d.clock.Now().Sub(t)
	if err != nil {
		return b.report, errors.Join(ackErr, err)
	}
	return b.report, ackErr
}

// batch is the state of one batch between its transaction and its
// notifications.
type batch struct {
	report  Report
	acks    []uint64
	pending []pending
	halted  bool // an owner's halt was applied in this batch
	resumed bool // an owner's resume or a new policy was applied
}

// process runs the batch transaction. Its commit time (the bbolt write
// and fsyncs) is measured apart from the checks inside.
func (d *Drainer) process(recs []Record) (*batch, error) {
	var b *batch
	var inside time.Duration
	start := d.clock.Now()
	now, err := d.judgeBy(start)
	if err != nil {
		return nil, err
	}
	err = d.db.Update(func(tx *bolt.Tx) error {
		defer func(t time.Time) { inside = d.clock.Now().Sub(t) }(d.clock.Now())
		b = &batch{report: Report{Records: len(recs)}}
		p := &proc{d: d, tx: tx, b: b, now: now}
		for _, r := range recs {
			if err := p.record(r); err != nil {
				return err
			}
		}
		if b.report.Deferred > 0 {
			if err := pruneDeferred(tx, now); err != nil {
				return err
			}
		}
		if d.cfg.Expiry != nil {
			if err := d.cfg.Expiry.Commit(tx, now); err != nil {
				return err
			}
		}
		for i := range b.pending {
			if err := putPending(tx, &b.pending[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	b.report.Time.Commit += d.clock.Now().Sub(start) - inside
	if b.halted {
		d.Halt()
	}
	return b, nil
}

// judgeBy returns the time a batch judges expiry by: the trusted time
// with Config.Expiry, else the clock's reading now.
func (d *Drainer) judgeBy(now time.Time) (time.Time, error) {
	if d.cfg.Expiry == nil {
		return now, nil
	}
	t, err := d.cfg.Expiry.Trusted()
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	return t, nil
}

// delivery builds the hand-off of an accepted object.
func delivery(o *governed.Object, sender did.DID, seq uint64, now time.Time) (deliver.Delivery, error) {
	raw, err := o.MarshalJSON()
	if err != nil {
		return deliver.Delivery{}, err
	}
	dl := deliver.Delivery{Object: raw, ObjectID: o.ID, Issuer: o.Issuer.String(),
		Purpose: o.Governance.Purpose, Seq: seq, DequeuedAt: now.UTC(), Attempt: 1}
	if !sender.IsZero() {
		dl.Sender = sender.String()
	}
	return dl, nil
}

// newPending makes the outbox entry of a delivery.
func (d *Drainer) newPending(dl deliver.Delivery, expires time.Time, a *gate.Action) (pending, error) {
	e := entry{ObjectID: dl.ObjectID, Issuer: dl.Issuer, Purpose: dl.Purpose, Seq: dl.Seq, Expires: expires, Action: a, Attempt: 1}
	if a == nil && d.cfg.Notify == AtLeastOnce {
		b, err := json.Marshal(dl)
		if err != nil {
			return pending{}, err
		}
		e.Delivery = b
	}
	if a != nil {
		a.Payload = nil // the delivery is in memory; the ledger key guards the effect
	}
	return pending{entry: e, delivery: dl}, nil
}
