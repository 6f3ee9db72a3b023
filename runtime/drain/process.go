package drain

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// proc processes records inside one batch transaction.
type proc struct {
	d   *Drainer
	tx  *bolt.Tx
	b   *batch
	now time.Time // the time at dequeue (Drainer.judgeBy), once per batch

	// per record
	seq      uint64
	from     did.DID
	changed  bool            // a part of this record changed state in tx
	envelope *gate.Presented // the Autonomy Envelope the message presents; nil: none
}

// record processes one record. It returns an error only for store failures,
// which abort the batch (ErrStore). An MLS error that is the message's
// rejects the record, even when Sessions changed tx on purpose (a corrupt
// session dropped, package session's ErrDropped): that change commits with
// the batch.
func (p *proc) record(r Record) error {
	p.seq, p.from, p.changed, p.envelope = r.Seq, parseFrom(r.From), false, nil
	rep := &p.b.report
	m, err := message(r.Body)
	var opaque errOpaque
	switch {
	case errors.As(err, &opaque):
		// Judged and refused: no later wake would judge it otherwise, so
		// it is acknowledged (the relay deletes it) rather than left to
		// fill the queue and come back at every wake.
		rep.reject(r.Seq, CauseOpaque, opaque.why)
	case err != nil:
		rep.reject(r.Seq, a2a.ReasonMalformed, err.Error())
	default:
		p.envelope = m.presented(p.from)
		for i, part := range m.parts {
			deferred, err := p.part(part)
			if err != nil {
				return err
			}
			if deferred != "" {
				return p.deferred(r, i, deferred)
			}
		}
	}
	if err := settled(p.tx, r); err != nil {
		return err
	}
	rep.Acked++
	p.b.acks = append(p.b.acks, r.Seq)
	return nil
}

// deferred leaves r queued (part i could not be processed yet: why), or,
// at its Config.MaxDeferrals-th deferral, acknowledges and reports it.
func (p *proc) deferred(r Record, i int, why string) error {
	rep := &p.b.report
	drop, n, err := deferral(p.tx, r, p.d.cfg.MaxDeferrals, p.now)
	if err != nil {
		return err
	}
	if !drop {
		rep.Deferred++
		rep.diag(r.Seq, CauseMLSDeferred, fmt.Sprintf("part %d: %s (deferred %d of %d times)", i, why, n, p.d.cfg.MaxDeferrals))
		return nil
	}
	rep.reject(r.Seq, CauseMLSUndeliverable, fmt.Sprintf("part %d: %s; deferred at %d drains and no later record unlocked it: dropped", i, why, n))
	rep.Acked++
	p.b.acks = append(p.b.acks, r.Seq)
	return nil
}

// part processes one part. It returns a non-empty reason when the record
// must stay queued (only possible before any part of it changed state).
func (p *proc) part(part a2a.Part) (deferred string, err error) {
	// The relay refuses at enqueue what this refuses (a2a.Refusal).
	mt, err := a2a.ObjectMediaType(part)
	if err != nil {
		p.b.report.reject(p.seq, partReason(err), err.Error())
		return "", nil
	}
	switch mt {
	case a2a.MediaTypeMLSWire:
		return p.mlsWire(part)
	case a2a.MediaTypeMLSHandshake:
		return "", p.handshake(part)
	}
	return "", p.dataObject(part)
}

func partReason(err error) string {
	var pe *a2a.PartError
	if errors.As(err, &pe) {
		return pe.Reason()
	}
	return a2a.ReasonMalformed
}

func (p *proc) dataObject(part a2a.Part) error {
	dop, err := a2a.ReadDataObject(part)
	if err != nil {
		p.b.report.reject(p.seq, partReason(err), err.Error())
		return nil
	}
	if !p.d.cfg.Accept.AllowPlaintext {
		p.b.report.reject(p.seq, CausePlaintext, "unencrypted Governed Object")
		return nil
	}
	return p.object(dop.Object, did.DID{})
}

func (p *proc) mlsWire(part a2a.Part) (string, error) {
	rep := &p.b.report
	w, err := a2a.ReadMLSWire(part)
	if err != nil {
		rep.reject(p.seq, partReason(err), err.Error())
		return "", nil
	}
	if p.d.cfg.Sessions == nil {
		rep.reject(p.seq, CauseNoSessions, "MLS wire part")
		return "", nil
	}
	t := p.d.clock.Now()
	op, err := p.d.cfg.Sessions.Open(p.tx, w, p.from)
	rep.Time.Open += p.d.clock.Now().Sub(t)
	switch {
	case err != nil && StoreFailure(err):
		return "", fmt.Errorf("record %d: MLS sessions: %w", p.seq, err)
	case err != nil && Deferred(err) && !p.changed:
		return err.Error(), nil
	case err != nil:
		rep.reject(p.seq, CauseMLS, err.Error())
		return "", nil
	case op.Commit:
		p.changed = true
		rep.Handshake++
		return "", nil
	}
	p.changed = true
	obj, err := plaintextObject(op.Plaintext)
	if err != nil {
		rep.reject(p.seq, CauseBadPlaintext, err.Error())
		return "", nil
	}
	return "", p.object(obj, op.Sender)
}

func (p *proc) handshake(part a2a.Part) error {
	rep := &p.b.report
	h, err := a2a.ReadHandshake(part)
	if err != nil {
		rep.reject(p.seq, partReason(err), err.Error())
		return nil
	}
	if p.d.cfg.Sessions == nil {
		rep.reject(p.seq, CauseNoSessions, "MLS handshake part")
		return nil
	}
	t := p.d.clock.Now()
	err = p.d.cfg.Sessions.ApplyHandshake(p.tx, h, p.from)
	rep.Time.Open += p.d.clock.Now().Sub(t)
	if err != nil && StoreFailure(err) {
		return fmt.Errorf("record %d: MLS handshake: %w", p.seq, err)
	}
	if err != nil {
		rep.reject(p.seq, CauseMLS, err.Error())
		return nil
	}
	p.changed = true
	rep.Handshake++
	return nil
}

// object runs one Governed Object through the six checks and then the
// gate or the outbox. sender is the MLS sender (zero for unencrypted
// carriage, which skips check 3).
func (p *proc) object(raw json.RawMessage, sender did.DID) error {
	rep := &p.b.report
	rep.Objects++
	o, rcv, err := p.check(raw, sender)
	if r := governed.ReasonOf(err); r != 0 {
		rep.reject(p.seq, r.String(), err.Error())
		return nil
	}
	if err != nil {
		return err // the replay cache failed: abort the batch
	}
	p.changed = true
	rep.Accepted++
	if gate.IsControl(o.Governance.Purpose) {
		return p.control(o)
	}
	dl, err := delivery(o, sender, p.seq, p.now)
	if err != nil {
		return err
	}
	expires := rcv.EffectiveExpiry(o)
	if p.d.cfg.Gate.Consequential(o.Governance.Purpose) {
		return p.action(o, dl, expires)
	}
	if _, ok := p.d.cfg.Router.Lookup(dl.Purpose); !ok {
		rep.reject(p.seq, CauseNoRoute, "purpose "+truncate(dl.Purpose))
		return nil
	}
	pd, err := p.d.newPending(dl, expires, nil)
	if err != nil {
		return err
	}
	p.b.pending = append(p.b.pending, pd)
	return nil
}

// check runs the six receiver checks (draft Section 8.1) on raw, timed.
func (p *proc) check(raw json.RawMessage, sender did.DID) (*governed.Object, *governed.Receiver, error) {
	t := p.d.clock.Now()
	defer func() { p.b.report.Time.Checks += p.d.clock.Now().Sub(t) }()
	o, err := governed.Parse(raw) // check 1
	if err != nil {
		return nil, nil, err
	}
	rcv := &governed.Receiver{Purposes: p.permitted(o), MaxLifetime: p.d.cfg.Accept.MaxLifetime, Clock: fixedClock(p.now)}
	err = rcv.AcceptObject(o, governed.Input{Sender: sender, Replay: p.d.cfg.Replay(p.tx)}) // checks 2-6
	return o, rcv, err
}

// permitted returns the allowlist for o's processing context: o's purpose
// when the configuration permits it (patterns, see runtime/purpose), and
// the control purposes for objects from the owner. The set comes from the
// receiver's configuration and the issuer the signature check will bind,
// never from the object's claims alone (draft Section 8.3).
func (p *proc) permitted(o *governed.Object) []string {
	pp := o.Governance.Purpose
	if gate.IsControl(pp) {
		if !p.d.cfg.Accept.Owner.IsZero() && o.Issuer == p.d.cfg.Accept.Owner {
			return []string{pp}
		}
		return nil
	}
	if p.d.cfg.Accept.Purposes.Match(pp) {
		return []string{pp}
	}
	return nil
}

// control applies an owner's control object.
func (p *proc) control(o *governed.Object) error {
	rep := &p.b.report
	res, err := p.d.cfg.Gate.Control(p.tx, o, p.now)
	if err != nil {
		if refusal(err) {
			rep.reject(p.seq, CauseControl, err.Error())
			return nil
		}
		return err
	}
	rep.Control++
	switch o.Governance.Purpose {
	case gate.PurposeHalt:
		p.b.halted = true
	case gate.PurposeResume, gate.PurposePolicy:
		p.b.resumed = true
	}
	return p.released(res.Run)
}

// released queues held actions the gate released (a confirmation, a
// resume, a new policy) for running after the commit.
func (p *proc) released(hs []gate.Held) error {
	for _, h := range hs {
		var dl deliver.Delivery
		if err := json.Unmarshal(h.Action.Payload, &dl); err != nil {
			return fmt.Errorf("drain: held action %q: %w", h.Action.LedgerKey(), err)
		}
		dl.IdempotencyKey = h.Action.LedgerKey()
		a := h.Action
		pd, err := p.d.newPending(dl, a.Expires, &a)
		if err != nil {
			return err
		}
		p.b.pending = append(p.b.pending, pd)
		p.b.report.Ran++
	}
	return nil
}

// refusal reports whether a gate error refuses the object (as opposed to a
// store failure).
func refusal(err error) bool {
	var ke *ledger.KeyError
	return errors.As(err, &ke) || errors.Is(err, gate.ErrBadPolicy) || errors.Is(err, gate.ErrStalePolicy) ||
		errors.Is(err, gate.ErrNoHold) || errors.Is(err, gate.ErrExpired) || errors.Is(err, gate.ErrNotOwner) ||
		errors.Is(err, gate.ErrUnknownControl) || errors.Is(err, gate.ErrBadControl)
}

// action runs a consequential object through the gate, at the batch's
// trusted time, with the Autonomy Envelope its message presents.
//
// Holder of key: the gate requires a presented chain's leaf sub to be the
// object's issuer and the sender the relay proved (Record.From, in
// Presented.Sender). The checks bind the issuer thus: check 2 verified the
// object's signature under the issuer's key, so the holder's key signed
// this very action; check 3 bound the issuer to the MLS sender's
// credential (for MLS carriage; plaintext carriage skips it). Neither
// compares the issuer with Record.From, so the gate does.
func (p *proc) action(o *governed.Object, dl deliver.Delivery, expires time.Time) error {
	rep := &p.b.report
	dlJSON, err := json.Marshal(dl)
	if err != nil {
		return err
	}
	a, err := gate.ActionOf(o, dlJSON)
	if err != nil {
		rep.reject(p.seq, CauseBadAction, err.Error())
		return nil
	}
	a.Expires, a.Envelope = expires, p.envelope
	dec, err := p.d.cfg.Gate.DecideAt(p.tx, a, p.now)
	if err != nil {
		return err
	}
	switch dec.Verdict {
	case gate.Hold:
		rep.Held++
		rep.diag(p.seq, "held:"+dec.Reason, a.LedgerKey())
	case gate.Refuse:
		rep.Refused++
		rep.diag(p.seq, "refused:"+dec.Reason, a.LedgerKey())
	case gate.Run:
		dl.IdempotencyKey = a.LedgerKey()
		pd, err := p.d.newPending(dl, expires, &a)
		if err != nil {
			return err
		}
		p.b.pending = append(p.b.pending, pd)
		rep.Ran++
		rep.diag(p.seq, "ran:"+dec.Reason, a.LedgerKey())
	}
	return nil
}
