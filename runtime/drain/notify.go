package drain

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/store/ledger"
)

// finish hands a committed batch's objects to the application, in queue
// order, runs its released actions, and then records every outcome (and
// completes the actions' ledger keys) in one transaction.
func (d *Drainer) finish(ctx context.Context, b *batch) error {
	if len(b.pending) == 0 {
		return nil
	}
	results := make([]result, len(b.pending))
	for i := range b.pending {
		results[i] = d.handOff(ctx, &b.pending[i])
		if results[i].delivered {
			b.report.Delivered++
		}
		d.reportHandOff(&b.report, &b.pending[i], results[i])
	}
	return d.settle(b.pending, results)
}

// reportHandOff counts and describes a hand-off that failed: an accepted
// object the application did not take is never dropped silently. With
// at-least-once notify it stays in the outbox for the next attempt; with
// at-most-once it is not handed over again.
func (d *Drainer) reportHandOff(r *Report, p *pending, res result) {
	if res.err == nil || res.unstarted {
		return
	}
	r.HandOffFailed++
	fate := "not handed over again (at-most-once notify)"
	switch {
	case p.entry.Action != nil:
		fate = "action " + p.entry.Action.LedgerKey() + " settled in the ledger"
	case d.cfg.Notify == AtLeastOnce && p.entry.Delivery != nil:
		fate = fmt.Sprintf("kept for another attempt (attempt %d, at-least-once notify)", p.entry.Attempt)
	case errors.Is(res.err, deliver.ErrNotStarted):
		fate = fmt.Sprintf("kept for another attempt at the next wake (attempt %d): the application certainly did not receive it", p.entry.Attempt)
	}
	r.diag(p.entry.Seq, CauseHandOff, fmt.Sprintf("object %q purpose %q: %v; %s",
		truncate(p.entry.ObjectID), truncate(p.entry.Purpose), res.err, fate))
}

// result is what became of one pending hand-off.
type result struct {
	outcome   deliver.Outcome
	err       error
	delivered bool // the handler returned an outcome
	unstarted bool // an action not started because of the owner's halt
}

// handOff gives one pending object to its handler. Actions run on the
// drainer's action context, which the owner's halt cancels; an action the
// halt overtook before it started is not started at all.
func (d *Drainer) handOff(ctx context.Context, p *pending) result {
	if p.entry.Action != nil {
		halted, err := d.halted()
		if err != nil {
			return result{err: err}
		}
		if halted {
			return result{unstarted: true}
		}
		ctx = d.actionContext()
	}
	o, err := d.cfg.Router.Deliver(ctx, p.delivery)
	return result{outcome: o, err: err, delivered: err == nil}
}

func (d *Drainer) halted() (bool, error) {
	var h bool
	err := d.db.View(func(tx *bolt.Tx) error {
		st, err := d.cfg.Gate.HaltState(tx)
		h = st.Halted
		return err
	})
	return h, err
}

// settle records the results of a batch's hand-offs in one transaction:
// outcomes, ledger completions, and the outbox entries removed (or, with
// at-least-once notify, kept for a failed hand-off).
func (d *Drainer) settle(ps []pending, rs []result) error {
	now := d.clock.Now().UTC()
	return d.db.Update(func(tx *bolt.Tx) error {
		var recs []OutcomeRecord
		ob := tx.Bucket(bucketOutbox)
		for i, p := range ps {
			r := rs[i]
			keep, err := d.settleOne(tx, p, r)
			if err != nil {
				return err
			}
			if !keep {
				if err := ob.Delete(p.key); err != nil {
					return err
				}
			}
			if r.unstarted {
				continue
			}
			rec := OutcomeRecord{At: now, Seq: p.entry.Seq, ObjectID: p.entry.ObjectID, Issuer: p.entry.Issuer,
				Purpose: p.entry.Purpose, Outcome: r.outcome, Attempt: p.entry.Attempt}
			if p.entry.Action != nil {
				rec.Key = p.entry.Action.LedgerKey()
			}
			if r.err != nil {
				rec.Err = r.err.Error()
			}
			recs = append(recs, rec)
		}
		return recordOutcomes(tx, recs, d.cfg.MaxOutcomes)
	})
}

// settleOne completes an action's ledger key or updates a notification's
// outbox entry. It reports whether the entry stays in the outbox.
func (d *Drainer) settleOne(tx *bolt.Tx, p pending, r result) (keep bool, err error) {
	if a := p.entry.Action; a != nil {
		key := a.LedgerKey()
		switch {
		case r.unstarted:
			a.Payload, _ = json.Marshal(p.delivery)
			return false, d.cfg.Gate.Unstart(tx, *a)
		case r.err == nil:
			receipt, _ := json.Marshal(r.outcome)
			return false, d.cfg.Ledger.Complete(tx, key, receipt, r.outcome.EffectID)
		case errors.Is(r.err, deliver.ErrNotStarted):
			return false, d.cfg.Ledger.Release(tx, key, r.err.Error())
		default:
			// The effect may have happened: indeterminate now, never retried.
			return false, d.cfg.Ledger.Abandon(tx, key, r.err.Error())
		}
	}
	notStarted := errors.Is(r.err, deliver.ErrNotStarted)
	if r.err == nil || !notStarted && (d.cfg.Notify != AtLeastOnce || p.entry.Delivery == nil) {
		return false, nil
	}
	// Keep a failed hand-off for the next attempt: with at-least-once
	// notify any failure, with at-most-once one the application certainly
	// did not see. Attempt counts the attempts made.
	e := p.entry
	e.NotStarted = notStarted
	if e.Delivery == nil {
		if e.Delivery, err = json.Marshal(p.delivery); err != nil {
			return false, err
		}
	}
	v, err := encMode.Marshal(e)
	if err != nil {
		return false, err
	}
	return true, tx.Bucket(bucketOutbox).Put(p.key, v)
}

// retryable reports whether Recover hands p over again: with at-least-once
// notify every kept delivery, with at-most-once one whose last hand-off
// certainly did not start.
func (d *Drainer) retryable(p pending) bool {
	if p.entry.Delivery == nil {
		return false
	}
	return d.cfg.Notify == AtLeastOnce || p.entry.NotStarted
}

// Recovery is what Recover found in the outbox after a restart.
type Recovery struct {
	// Lost counts notifications a crash may have cut off, with
	// at-most-once notify: recorded in the ledger (ledger.Lost), never
	// repeated.
	Lost int
	// Indeterminate counts actions a crash cut off; their ledger keys are
	// indeterminate until reconciled.
	Indeterminate int
	// Expired counts at-least-once hand-offs dropped because their object
	// expired before the application took it.
	Expired int
	// Redelivered counts at-least-once hand-offs given to the application
	// again, and Failed those that failed again (kept for later).
	Redelivered, Failed int
}

// Recover settles the outbox a previous run left behind: at-most-once
// notifications are moved into the ledger as possibly lost
// (ledger.RecordLost), never repeated; actions are reported (the
// ledger made their keys indeterminate when it opened) and dropped; with
// at-least-once notify, pending hand-offs are given to the application
// again, and those whose object expired are dropped. Call it once per wake,
// before draining.
func (d *Drainer) Recover(ctx context.Context) (Recovery, error) {
	d.run.Lock()
	defer d.run.Unlock()
	var rec Recovery
	if empty, err := d.viewed(outboxEmpty); err != nil || empty {
		return rec, err // nothing to settle: no write transaction
	}
	var again []pending
	now := d.clock.Now()
	err := d.db.Update(func(tx *bolt.Tx) error {
		ps, err := loadOutbox(tx)
		if err != nil {
			return err
		}
		if len(ps) == 0 {
			return errUnchanged // nothing to settle: no commit, no fsync
		}
		for _, p := range ps {
			switch {
			case p.entry.Action != nil:
				rec.Indeterminate++
			case !d.retryable(p):
				rec.Lost++
				if err := d.recordLost(tx, p); err != nil {
					return err
				}
			case !p.entry.Expires.IsZero() && !now.Before(p.entry.Expires):
				rec.Expired++
			default:
				p.delivery.Attempt = p.entry.Attempt + 1
				p.entry.Attempt++
				if err := d.inFlight(tx, &p); err != nil {
					return err
				}
				again = append(again, p)
				continue
			}
			if err := tx.Bucket(bucketOutbox).Delete(p.key); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		err = nil
	}
	if err != nil || len(again) == 0 {
		return rec, err
	}
	rs := make([]result, len(again))
	for i := range again {
		rs[i] = d.handOff(ctx, &again[i])
		if rs[i].err == nil {
			rec.Redelivered++
		} else {
			rec.Failed++
		}
	}
	return rec, d.settle(again, rs)
}

// recordLost keeps p, a hand-off a crash may have cut off, in the ledger,
// in the transaction that removes it from the outbox: it is reported at
// every wake (runtime's log, signed status and status command) until the
// ledger's retention drops it, even if this wake is killed too.
func (d *Drainer) recordLost(tx *bolt.Tx, p pending) error {
	return d.cfg.Ledger.RecordLost(tx, ledger.Lost{ObjectID: p.entry.ObjectID, Issuer: p.entry.Issuer,
		Purpose: p.entry.Purpose, Seq: p.entry.Seq, Attempt: p.entry.Attempt})
}

// inFlight records, with at-most-once notify, that p's repetition is
// about to start: a crash during it leaves an entry Recover reports lost
// and never repeats.
func (d *Drainer) inFlight(tx *bolt.Tx, p *pending) error {
	if d.cfg.Notify == AtLeastOnce {
		return nil
	}
	p.entry.NotStarted = false
	v, err := encMode.Marshal(p.entry)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketOutbox).Put(p.key, v)
}

// fixedClock is the batch's moment of dequeue, for the receiver checks.
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

func (c fixedClock) NewTimer(time.Duration) clock.Timer {
	panic(fmt.Sprintf("drain: the dequeue clock (%v) makes no timers", time.Time(c)))
}

// Redecide runs every held action through the gate again, in a
// transaction of its own (after a fresh pulse ended a liveness
// suspension), and hands those the gate now allows to the application. It
// returns the report of what ran.
//
// The policy, the liveness and the expiries are judged by the trusted
// time, as at dequeue; without it nothing is redecided (the holds stay,
// and the next Redecide or batch judges them).
func (d *Drainer) Redecide(ctx context.Context) (Report, error) {
	d.run.Lock()
	defer d.run.Unlock()
	now, err := d.judgeBy(d.clock.Now())
	if err != nil {
		return Report{}, nil
	}
	if none, err := d.viewed(d.noHolds); err != nil || none {
		if err != nil {
			return Report{}, fmt.Errorf("drain: redeciding held actions: %w", err)
		}
		return Report{}, nil // nothing held: no write transaction
	}
	var b *batch
	err = d.db.Update(func(tx *bolt.Tx) error {
		b = &batch{}
		if none, err := d.noHolds(tx); err != nil || none {
			return cmp.Or(err, errUnchanged) // nothing held: no commit, no fsync
		}
		hs, err := d.cfg.Gate.Redecide(tx, now)
		if err != nil {
			return err
		}
		p := &proc{d: d, tx: tx, b: b, now: now}
		if err := p.released(hs); err != nil {
			return err
		}
		for i := range b.pending {
			if err := putPending(tx, &b.pending[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errUnchanged) {
		return Report{}, nil
	}
	if err != nil {
		return Report{}, fmt.Errorf("drain: redeciding held actions: %w", err)
	}
	return b.report, d.finish(ctx, b)
}

// errUnchanged rolls back a transaction that found nothing to do: a
// commit costs two fsyncs even when it wrote nothing, and Recover and
// Redecide run at every wake (docs/performance.md, "An empty wake").
var errUnchanged = errors.New("drain: unchanged")

// viewed runs none in a read transaction: Recover and Redecide ask it
// first whether there is nothing to do, which is so at most wakes, and
// open a write transaction (bbolt's writer lock, and a freelist reloaded
// when it rolls back) only when there is something. The write
// transaction checks again: a writer may have come in between.
func (d *Drainer) viewed(none func(*bolt.Tx) (bool, error)) (bool, error) {
	var ok bool
	err := d.db.View(func(tx *bolt.Tx) error {
		var err error
		ok, err = none(tx)
		return err
	})
	return ok, err
}

// outboxEmpty reports whether the outbox holds no entry.
func outboxEmpty(tx *bolt.Tx) (bool, error) {
	k, _ := tx.Bucket(bucketOutbox).Cursor().First()
	return k == nil, nil
}

// noHolds reports whether the gate holds no action.
func (d *Drainer) noHolds(tx *bolt.Tx) (bool, error) {
	hs, err := d.cfg.Gate.Holds(tx)
	return len(hs) == 0, err
}

// Confirm releases the held action with ledger key key, as the owner's
// confirmation does (for an operator confirming on the device itself),
// and hands it to the application. It returns the gate's errors
// (gate.ErrNoHold, gate.ErrExpired, the ledger's *KeyError), and one
// wrapping ErrUntrusted when there is no trusted time to judge the
// action's expiry by.
func (d *Drainer) Confirm(ctx context.Context, key string) (Report, error) {
	d.run.Lock()
	defer d.run.Unlock()
	now, err := d.judgeBy(d.clock.Now())
	if err != nil {
		return Report{}, err
	}
	var b *batch
	err = d.db.Update(func(tx *bolt.Tx) error {
		b = &batch{}
		h, err := d.cfg.Gate.Confirm(tx, key, now)
		if err != nil {
			return err
		}
		p := &proc{d: d, tx: tx, b: b, now: now}
		if err := p.released([]gate.Held{h}); err != nil {
			return err
		}
		return putPending(tx, &b.pending[0])
	})
	if err != nil {
		return Report{}, err
	}
	return b.report, d.finish(ctx, b)
}
