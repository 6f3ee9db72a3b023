package runtime

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/store/replay"
)

// PipelineConfig is what the receive side needs. Config embeds it, and
// tools (the conformance runner, torpor-agent's operator commands)
// assemble the agent's real pipeline from it without a relay.
type PipelineConfig struct {
	// Key is the agent's identity (did:key). Required.
	Key *did.PrivateKey
	// Owner is the DID whose signed policies and control objects the
	// agent obeys (optional).
	Owner did.DID
	// Purposes are the purposes the agent accepts (draft Section 8.3).
	Purposes purpose.Set
	// Consequential are the purposes that never run without the owner's
	// confirmation or policy (for example action:*).
	Consequential purpose.Set
	// AllowPlaintext accepts unencrypted Governed Objects.
	AllowPlaintext bool
	// MaxLifetime applies to objects that declare no expiry; zero means
	// governed.DefaultMaxLifetime.
	MaxLifetime time.Duration
	// Routes hand accepted objects to the application, by purpose.
	Routes []deliver.Route
	// Notify is the notify mode of the hand-off.
	Notify drain.NotifyMode
	// Sessions opens MLS messages (package session); nil rejects MLS.
	Sessions drain.Sessions
	// Clock is the wall clock; nil means clock.Real. A clock.Scaled makes
	// an hour pass in seconds (--time-scale).
	Clock clock.Clock
	// Expiry, when set, is the trusted time the drain judges expiry by
	// (runtime/trusted; drain.Config.Expiry); nil judges by Clock. The
	// agent sets it from Config.TrustedTime.
	Expiry drain.Expiry
	// UpdateInstall, when set, is where a held update the owner confirmed
	// goes (updatehold.go): the agent sets it to its Updates.OnVerified or
	// rauc install. An error wrapping deliver.ErrNotStarted says nothing
	// was installed (the ledger key is released); another, that the
	// install may have run. Nil refuses to confirm held updates
	// (ErrNoInstall); they stay held.
	UpdateInstall func(path string, res update.Result) error
}

// Pipeline is the agent's receive side on one bbolt file: the idempotency
// ledger, the action gate, the replay cache, the pulse chain and the
// drainer that uses them all in one transaction per batch.
//
// The operator's operations (Halt, Resume, Confirm, Deny, Reconcile,
// Holds, Entries, Report) are its methods, so that the MQTT commands
// (runtime/manage's Commands) and torpor-agent's offline commands run the
// same transactions.
type Pipeline struct {
	install bool // held updates can be confirmed (PipelineConfig.UpdateInstall)
	clock   clock.Clock
	db      *bolt.DB
	ledger  *ledger.Ledger
	gate    *gate.Gate
	replay  *replay.Cache
	chain   *pulse.Chain
	drainer *drain.Drainer
	// unrec is the wake's record that waits for the next commit
	// (record.go).
	unrec pending
}

// OpenPipeline assembles the pipeline in db. Opening starts a new ledger
// incarnation: reservations a previous process left unfinished become
// indeterminate.
func OpenPipeline(db *bolt.DB, c PipelineConfig) (*Pipeline, error) {
	clk := clock.Or(c.Clock)
	p := &Pipeline{db: db, clock: clk}
	var err error
	if p.ledger, err = ledger.Open(db, &ledger.Options{Clock: clk}); err != nil {
		return nil, err
	}
	if p.chain, err = pulse.OpenChain(db, c.Key); err != nil {
		return nil, err
	}
	if p.gate, err = gate.Open(p.ledger, gate.Config{
		Owner: c.Owner, Agent: c.Key.DID(), Consequential: c.Consequential, Clock: clk,
		Liveness: p.lastPulse,
	}); err != nil {
		return nil, err
	}
	if p.replay, err = replay.Open(db, &replay.Options{Clock: clk}); err != nil {
		return nil, err
	}
	routes := c.Routes
	if c.UpdateInstall != nil {
		routes = append([]deliver.Route{installRoute(c.UpdateInstall)}, routes...)
		p.install = true
	}
	router, err := deliver.NewRouter(routes...)
	if err != nil {
		return nil, err
	}
	p.drainer, err = drain.New(drain.Config{
		Gate: p.gate, Ledger: p.ledger,
		Accept:   drain.Accept{Owner: c.Owner, Purposes: c.Purposes, AllowPlaintext: c.AllowPlaintext, MaxLifetime: c.MaxLifetime},
		Sessions: c.Sessions, Replay: func(tx *bolt.Tx) governed.ReplayCache { return p.replay.Tx(tx) },
		Router: router, Notify: c.Notify, Clock: clk, Expiry: c.Expiry,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// lastPulse is the gate's liveness source: the time of the chain head.
func (p *Pipeline) lastPulse(tx *bolt.Tx) (time.Time, bool, error) {
	_, head, ok, err := p.chain.Head(tx)
	return head.At, ok, err
}

// Pulse makes the next pulse and records it as the chain head. It returns
// the signed document to publish and the pulse it holds. After a fresh
// pulse, Redecide runs the actions a liveness suspension held. The same
// transaction commits the record of the wake before, which waited for it
// (record.go): one commit per empty wake. The pulse is committed before
// Pulse returns it, so a published pulse is always on the flash.
func (p *Pipeline) Pulse(now, nextWake time.Time, mode string) (doc []byte, pl pulse.Pulse, err error) {
	return p.pulse(now, nextWake, mode, nil)
}

// pulse is Pulse with also (nil: nothing) run in the same transaction:
// the wake's trusted-time floor.
func (p *Pipeline) pulse(now, nextWake time.Time, mode string, also func(*bolt.Tx) error) (doc []byte, pl pulse.Pulse, err error) {
	u := p.unrec.take()
	err = p.db.Update(func(tx *bolt.Tx) error {
		h, err := p.gate.HaltState(tx)
		if err != nil {
			return err
		}
		if doc, pl, err = p.chain.Next(tx, now, nextWake, mode, h.Halted); err != nil {
			return err
		}
		if u != nil {
			if err := putWake(tx, u); err != nil {
				return err
			}
		}
		if also != nil {
			return also(tx)
		}
		return nil
	})
	if err != nil {
		return nil, pulse.Pulse{}, fmt.Errorf("runtime: pulse: %w", err)
	}
	p.unrec.committed(u)
	return doc, pl, nil
}

// Redecide runs the held actions through the gate again (after a fresh
// pulse ended a suspension) and hands those now allowed to the
// application. It returns how many ran.
func (p *Pipeline) Redecide(ctx context.Context) (int, error) {
	rep, err := p.drainer.Redecide(ctx)
	return rep.Ran, err
}
