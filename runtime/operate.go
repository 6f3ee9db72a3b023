package runtime

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/store/replay"
)

// The operator's operations on the pipeline. Each has one implementation
// here: runtime/manage's Commands (MQTT) and torpor-agent's offline
// commands only parse their arguments and format the result.

// Recorded returns the note an operation records: note, then who acted.
// by names who acted (an operator DID and the command, or the local
// user).
func Recorded(note, by string) string {
	if by == "" {
		return strings.TrimSpace(note)
	}
	return strings.TrimSpace(note + " — " + by)
}

// Halt is the owner's halt: from now on every consequential action is
// held, and effects in flight are cancelled. It stays in force across
// restarts until Resume.
func (p *Pipeline) Halt(by, note string) error {
	if err := p.db.Update(func(tx *bolt.Tx) error { return p.gate.Halt(tx, Recorded(note, by)) }); err != nil {
		return fmt.Errorf("runtime: halt: %w", err)
	}
	p.drainer.Halt()
	return nil
}

// Resume lifts the owner's halt and runs the held actions a policy now
// allows. It returns how many ran.
func (p *Pipeline) Resume(ctx context.Context, by, note string) (int, error) {
	if err := p.db.Update(func(tx *bolt.Tx) error { return p.gate.Resume(tx, Recorded(note, by)) }); err != nil {
		return 0, fmt.Errorf("runtime: resume: %w", err)
	}
	return p.Redecide(ctx)
}

// Confirmed is what Confirm did.
type Confirmed struct {
	// Delivered counts the deliveries to the application.
	Delivered int
	// Entry is the action's ledger entry afterwards.
	Entry ledger.Entry
}

// Confirm runs the held action with ledger key key, as the owner's
// confirmation does, and hands it to the application. It returns the
// gate's errors (gate.ErrNoHold, gate.ErrExpired, the ledger's *KeyError),
// and ErrNoInstall for a held update this pipeline cannot install. A held
// update runs its install (PipelineConfig.UpdateInstall).
func (p *Pipeline) Confirm(ctx context.Context, key string) (Confirmed, error) {
	if !p.install {
		if upd, err := p.isHeldUpdate(key); err != nil || upd {
			return Confirmed{}, cmp.Or(err, ErrNoInstall)
		}
	}
	rep, err := p.drainer.Confirm(ctx, key)
	if err != nil {
		return Confirmed{}, err
	}
	c := Confirmed{Delivered: rep.Delivered}
	err = p.db.View(func(tx *bolt.Tx) error {
		c.Entry, err = p.ledger.Get(tx, key)
		return err
	})
	return c, err
}

// Deny drops the held action with ledger key key and returns it. A
// denied update is remembered (until the targets metadata that listed it
// expires): later checks report it refused, "denied", and do not hold it
// again.
func (p *Pipeline) Deny(key string) (gate.Held, error) {
	var h gate.Held
	err := p.db.Update(func(tx *bolt.Tx) error {
		var err error
		if h, err = p.gate.Deny(tx, key); err != nil || h.Action.Purpose != PurposeUpdate {
			return err
		}
		return denyUpdate(tx, h, p.clock.Now())
	})
	return h, err
}

// Reconcile resolves the indeterminate ledger key key as r says (the
// effect happened, or did not) and returns the entry afterwards. r.Note
// records who reconciled.
func (p *Pipeline) Reconcile(by, key string, r ledger.Resolution) (ledger.Entry, error) {
	if by != "" {
		r.Note = Recorded(r.Note, "reconciled by "+by)
	}
	var e ledger.Entry
	err := p.db.Update(func(tx *bolt.Tx) error {
		if err := p.ledger.Reconcile(tx, key, r); err != nil {
			return err
		}
		var err error
		e, err = p.ledger.Get(tx, key)
		return err
	})
	return e, err
}

// Holds returns the actions waiting for the owner.
func (p *Pipeline) Holds() (hs []gate.Held, err error) {
	err = p.db.View(func(tx *bolt.Tx) error {
		hs, err = p.gate.Holds(tx)
		return err
	})
	return hs, err
}

// Entries returns the idempotency ledger's entries.
func (p *Pipeline) Entries() (es []ledger.Entry, err error) {
	err = p.db.View(func(tx *bolt.Tx) error {
		return p.ledger.List(tx, func(e ledger.Entry) bool { es = append(es, e); return true })
	})
	return es, err
}

// Entry returns the ledger entry of key (ledger.ErrNotFound when none).
func (p *Pipeline) Entry(key string) (e ledger.Entry, err error) {
	err = p.db.View(func(tx *bolt.Tx) error {
		e, err = p.ledger.Get(tx, key)
		return err
	})
	return e, err
}

// Report is the agent's state as an operator reads it, from one
// transaction.
type Report struct {
	// LastWake is the last wake's report, nil before the first.
	LastWake *WakeReport
	Halt     gate.HaltState
	// Policy is the owner's policy, nil when none was set.
	Policy *gate.Policy
	Holds  []gate.Held
	// Ledger counts the ledger's entries by state.
	Ledger map[string]int
	// Indeterminate lists indeterminate keys, as many as Report was asked for.
	Indeterminate []ledger.Entry
	// Lost is what the ledger keeps of the hand-offs a crash may have cut
	// off with at-most-once notify (ledger.RecordLost), oldest first.
	Lost ledger.LostSummary
}

// Report reads the agent's state. It lists at most max indeterminate
// keys.
func (p *Pipeline) Report(max int) (Report, error) {
	r := Report{Ledger: map[string]int{}}
	err := p.db.View(func(tx *bolt.Tx) error {
		if w, ok, err := p.lastWake(tx); err != nil {
			return err
		} else if ok {
			r.LastWake = &w
		}
		if pol, ok, err := p.gate.Policy(tx); err != nil {
			return err
		} else if ok {
			r.Policy = &pol
		}
		var err error
		if r.Halt, err = p.gate.HaltState(tx); err != nil {
			return err
		}
		if r.Holds, err = p.gate.Holds(tx); err != nil {
			return err
		}
		if r.Lost, err = p.ledger.LostHandOffs(tx); err != nil {
			return err
		}
		return p.ledger.List(tx, func(e ledger.Entry) bool {
			r.Ledger[e.State.String()]++
			if e.State == ledger.Indeterminate && len(r.Indeterminate) < max {
				r.Indeterminate = append(r.Indeterminate, e)
			}
			return true
		})
	})
	return r, err
}

// Batch checks and handles records dequeued from the relay in one
// transaction (drain.Drainer.Batch); ack, when not nil, acknowledges them.
func (p *Pipeline) Batch(ctx context.Context, recs []drain.Record, ack drain.AckFunc) (drain.Report, error) {
	return p.drainer.Batch(ctx, recs, ack)
}

// Recover settles what a previous process left in flight
// (drain.Drainer.Recover).
func (p *Pipeline) Recover(ctx context.Context) (drain.Recovery, error) {
	return p.drainer.Recover(ctx)
}

// Close cancels effects in flight. The caller closes the bbolt file.
func (p *Pipeline) Close() { p.drainer.Close() }

// Stores returns the bbolt file, replay cache and idempotency ledger the
// pipeline works on, for the admission of operators' commands
// (runtime/manage), which records in the same file and transactions.
func (p *Pipeline) Stores() (*bolt.DB, *replay.Cache, *ledger.Ledger) {
	return p.db, p.replay, p.ledger
}

// StatusChanged publishes the agent's state, with its signed status, to
// the relay at once when a wake is live, so that what the status says
// (halted, held actions) shows in the relay's fleet view without waiting
// for the next pulse or wake. A sleeping agent publishes it at its next
// wake anyway.
func (a *Agent) StatusChanged() {
	a.mu.Lock()
	w := a.cur
	a.mu.Unlock()
	if w == nil {
		return
	}
	select {
	case w.restate <- struct{}{}:
	default: // one is pending; it reads the latest status
	}
}
