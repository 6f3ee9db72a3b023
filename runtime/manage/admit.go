package manage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/store/replay"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
)

// bucketSeq maps an operator DID to the sequence number of the last command
// from that operator the device accepted (uint64 big-endian).
var bucketSeq = []byte("mqtt-cmd-seq")

// admitter decides whether a command may run. Its state is in the agent's
// bbolt file: the replay cache, the ledger and the sequence table.
type admitter struct {
	db        *bolt.DB
	replay    *replay.Cache
	ledger    *ledger.Ledger
	operators map[string]bool
	recv      *governed.Receiver
	maxTTL    time.Duration
}

func newAdmitter(db *bolt.DB, rc *replay.Cache, l *ledger.Ledger, operators []did.DID, recv *governed.Receiver, maxTTL time.Duration) (*admitter, error) {
	a := &admitter{db: db, replay: rc, ledger: l, operators: map[string]bool{}, recv: recv, maxTTL: maxTTL}
	for _, o := range operators {
		if o.IsZero() {
			return nil, errors.New("manage: zero DID in the operator allowlist")
		}
		a.operators[o.String()] = true
	}
	err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketSeq)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("manage: %w", store.Err(err))
	}
	return a, nil
}

// admit runs every check on the parsed command o for the device self, in
// this order, and records its admission in one transaction:
//
//  1. the six receiver checks of draft-chapman-a2a-mls-03 Section 8.1
//     (structure was checked by Parse; then signature, sender binding
//     (none: MQTT carries the object unencrypted), expiry, replay,
//     purpose torpor:command), recording the id in the replay cache;
//  2. the issuer is in the operator allowlist;
//  3. the payload is a well-formed command with known op and valid args,
//     and its lifetime does not exceed the device's maximum;
//  4. it names this device's DID;
//  5. its sequence number is greater than the last one accepted from that
//     operator;
//  6. its ledger key is reserved (store/ledger), so that a restart before
//     completion leaves it indeterminate, not repeatable.
//
// The transaction commits only when all pass. A refused command returns a
// *rejection; a store failure returns its error. also, when not nil,
// runs in the same transaction once cmd passed.
func (a *admitter) admit(self did.DID, o *governed.Object, also func(tx *bolt.Tx, cmd Command) error) (Command, error) {
	var cmd Command
	err := a.db.Update(func(tx *bolt.Tx) error {
		var err error
		if cmd, err = a.admitTx(tx, self, o); err != nil || also == nil {
			return err
		}
		return also(tx, cmd)
	})
	return cmd, store.Err(err)
}

func (a *admitter) admitTx(tx *bolt.Tx, self did.DID, o *governed.Object) (Command, error) {
	if err := a.recv.AcceptObject(o, governed.Input{Replay: a.replay.Tx(tx)}); err != nil {
		if governed.ReasonOf(err) == governed.ReasonReplay && a.operators[o.Issuer.String()] {
			return Command{}, a.replayed(tx, o)
		}
		if r := governed.ReasonOf(err); r != 0 {
			var re *governed.RejectError
			errors.As(err, &re)
			return Command{}, reject(r.String(), "%s", re.Detail)
		}
		return Command{}, err
	}
	if !a.operators[o.Issuer.String()] {
		return Command{}, reject(command.ReasonOperatorNotAllowed, "%s is not in this device's operator allowlist", o.Issuer)
	}
	p, args, err := command.ParsePayload(o)
	if err != nil {
		return Command{}, reject(command.ReasonBadCommand, "%v", err)
	}
	// The declared lifetime, not the receiver's capped one: a command that
	// asks to live longer than the device allows is refused, not cut short.
	exp, ok := o.Expiry()
	if !ok {
		exp = a.recv.EffectiveExpiry(o)
	}
	if life := exp.Sub(o.IssuedAt); life > a.maxTTL {
		return Command{}, reject(command.ReasonBadCommand, "lifetime %v exceeds the device's maximum %v", life, a.maxTTL)
	}
	if p.Device != self.String() {
		return Command{}, reject(command.ReasonWrongDevice, "command is for %s; this device is %s", truncate(p.Device), self)
	}
	last := lastSeq(tx, o.Issuer)
	if p.Seq <= last {
		return Command{}, reject(command.ReasonOutOfSequence, "seq %d is not greater than %d, the last accepted from %s", p.Seq, last, o.Issuer)
	}
	cmd := Command{ID: o.ID, Operator: o.Issuer, Seq: p.Seq, Op: p.Op, Args: args,
		IssuedAt: o.IssuedAt, Expires: a.recv.EffectiveExpiry(o), Key: LedgerKey(o.Issuer, o.ID)}
	if err := a.ledger.Reserve(tx, ledger.Reservation{Key: cmd.Key, Action: command.Purpose + ":" + cmd.Op,
		Counterparty: o.Issuer.String(), EffectID: cmd.Key}); err != nil {
		var ke *ledger.KeyError
		if errors.As(err, &ke) {
			return Command{}, refusedKey(ke)
		}
		return Command{}, err
	}
	return cmd, putSeq(tx, o.Issuer, p.Seq)
}

// replayed explains a replayed command from an allowed operator: the ledger
// says whether it ran (a redelivery after a restart, or a replay by whoever
// controls the broker; it does not run again either way).
func (a *admitter) replayed(tx *bolt.Tx, o *governed.Object) error {
	e, err := a.ledger.Get(tx, LedgerKey(o.Issuer, o.ID))
	if err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			return reject(governed.ReasonReplay.String(), "id %q was accepted before", truncate(o.ID))
		}
		return err
	}
	return refusedKey(&ledger.KeyError{Op: "get", Entry: e})
}

// refusedKey maps a ledger entry that must not run again to a rejection.
func refusedKey(ke *ledger.KeyError) *rejection {
	e := ke.Entry
	switch e.State {
	case ledger.Indeterminate:
		return &rejection{outcome: command.OutcomeIndeterminate, reason: "indeterminate",
			detail: fmt.Sprintf("accepted at %s before a restart; it may or may not have taken effect; reconcile key %q", e.ReservedAt.Format(time.RFC3339), e.Key)}
	case ledger.Reserved:
		r := reject(governed.ReasonReplay.String(), "already running since %s", e.ReservedAt.Format(time.RFC3339))
		r.running = true
		return r
	case ledger.Completed:
		r := reject(governed.ReasonReplay.String(), "already executed at %s (%s)", e.ResolvedAt.Format(time.RFC3339), receiptOutcome(e.Receipt))
		r.receipt = e.Receipt
		return r
	}
	return reject(governed.ReasonReplay.String(), "ledger key %q is %s", e.Key, e.State)
}

// receiptOutcome summarises the stored reply of a completed command.
func receiptOutcome(receipt []byte) string {
	o, err := governed.Parse(receipt)
	if err != nil {
		return "outcome recorded"
	}
	var r command.Reply
	if json.Unmarshal(o.Payload, &r) != nil {
		return "outcome recorded"
	}
	s := "outcome " + string(r.Outcome)
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	return s
}

func lastSeq(tx *bolt.Tx, operator did.DID) uint64 {
	v := tx.Bucket(bucketSeq).Get([]byte(operator.String()))
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func putSeq(tx *bolt.Tx, operator did.DID, seq uint64) error {
	return tx.Bucket(bucketSeq).Put([]byte(operator.String()), binary.BigEndian.AppendUint64(nil, seq))
}

// LastSeq returns the sequence number of the last command db's device
// accepted from operator, 0 for none.
func LastSeq(db *bolt.DB, operator did.DID) (seq uint64, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketSeq) == nil {
			return nil
		}
		seq = lastSeq(tx, operator)
		return nil
	})
	return seq, err
}
