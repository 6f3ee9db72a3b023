package runtime

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/version"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// status returns the wake's signed status for the relay (link
// wire.State.Status): the agent's build and board, its halt, the actions
// held for the owner, the possibly lost hand-offs and the wake before
// this one, read in one transaction and signed with the agent's key as a
// Governed Object of purpose wire.PurposeStatus, and its content (the
// payload's JSON), which the caller records as sent once the relay
// accepted it. It returns nil when the relay holds a status of the same
// content, accepted over this link: the relay keeps what it has, and the
// frame costs no status. It returns nil, logged, when that fails: the
// state goes out without it, and the relay keeps the previous one.
func (w *wakeRun) status() (signed []byte, content string) {
	a := w.a
	st, c, err := w.statusContent()
	if err == nil {
		if w.statusHeld(c) {
			return nil, ""
		}
		var b []byte
		if b, err = signStatus(a.cfg.Key, a.clock.Now(), st); err == nil {
			return b, string(c)
		}
	}
	a.log.Warn("signing the status for the relay", "err", err)
	return nil, ""
}

// statusContent reads the wake's status and returns it with its content
// (the payload's JSON), unsigned. What the store says is read again only
// when something was committed since the wake's last status
// (Pipeline.statusSince).
func (w *wakeRun) statusContent() (wire.Status, []byte, error) {
	a := w.a
	w.mu.Lock()
	kept := w.stored
	w.mu.Unlock()
	ss, err := a.pipe.statusSince(kept)
	if err != nil {
		return ss.st, nil, err
	}
	w.mu.Lock()
	w.stored = &ss
	w.mu.Unlock()
	st := ss.st
	st.Board = a.cfg.Board
	st.Wake = &wire.StatusWake{At: w.rep.At, Reason: w.rep.Reason}
	st.Health = w.readHealth()
	if a.cfg.Status.Install != nil {
		st.Install = a.cfg.Status.Install()
	}
	if u := a.cfg.Relay.Updates; u != nil && u.Rauc != nil {
		st.OSInstall = a.osInstallStatus(u.Rauc)
	}
	w.mu.Lock()
	st.Update, st.OSUpdate = w.update, w.osUpdate
	w.mu.Unlock()
	c, err := json.Marshal(st)
	return st, c, err
}

// statusHeld reports whether the relay accepted a status of content c
// over the link in use.
func (w *wakeRun) statusHeld(c []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sentStatus == string(c)
}

// HealthTimeout bounds how long a wake waits for Config.Status.Health: a
// reading stuck on a file (a firmware call, a hung file system) must not
// hold the wake's status. It is real time, also under a time scale: the
// reading measures the board's I/O, not the device's day, so it runs on
// clock.Unscaled (see the clock package's rule), and a scaled clock does
// not cut a slow reading short.
const HealthTimeout = 2 * time.Second

// readHealth returns the board's health, read once a wake, so that the
// statuses one wake publishes differ only in what changed in the store;
// nil when the agent reads none, or the reading took longer than
// HealthTimeout (its goroutine is left to finish on its own).
func (w *wakeRun) readHealth() *wire.StatusHealth {
	a := w.a
	if a.cfg.Status.Health == nil {
		return nil
	}
	w.healthOnce.Do(func() {
		ch := make(chan *wire.StatusHealth, 1)
		go func() { ch <- a.cfg.Status.Health() }()
		t := clock.Unscaled(a.clock).NewTimer(HealthTimeout)
		defer t.Stop()
		select {
		case w.health = <-ch:
		case <-t.C():
			a.log.Warn("the board's health readings took too long; the status goes without them", "after", HealthTimeout)
		case <-w.ctx.Done():
		}
	})
	return w.health
}

// signStatus signs st, listing fewer held actions, then fewer lost
// hand-offs (HeldCount and LostCount still count them all) until it fits
// in wire.MaxStatus, which the relay enforces: a sender's long idempotency
// keys or DIDs must not keep the device from publishing its state.
func signStatus(key *did.PrivateKey, now time.Time, st wire.Status) ([]byte, error) {
	for {
		o, err := governed.Sign(key, governed.Template{IssuedAt: now, Semantic: governed.Semantic{Schema: wire.StatusSchema}, Purpose: wire.PurposeStatus, Payload: st})
		if err != nil {
			return nil, err
		}
		b, _ := o.MarshalJSON()
		switch {
		case len(b) <= wire.MaxStatus:
			return b, nil
		case len(st.Held) > 0:
			st.Held = st.Held[:len(st.Held)/2]
		case len(st.Lost) > 0:
			st.Lost = st.Lost[:len(st.Lost)/2] // the newest stay
		case st.LastWake != nil && st.LastWake.Phases != nil:
			last := *st.LastWake // st's copy: the wake keeps what it read (statusSince)
			last.Phases = nil
			st.LastWake = &last
		default:
			return nil, fmt.Errorf("a status of %d bytes exceeds %d", len(b), wire.MaxStatus)
		}
	}
}

// storeStatus is what a status reports from the agent's store, and the
// id of the transaction it was read in: bbolt's id of the last commit
// before it.
type storeStatus struct {
	st   wire.Status
	txid int
}

// statusSince returns what the status reports from the store, read again
// only when a transaction was committed since kept was read (kept nil:
// none was read); kept otherwise. Besides the store, the status reads
// the last wake's report from memory, which changes only with a commit
// or when a wake ends (record.go), after its last status. The announce
// of an empty wake, which has committed nothing since its first state,
// so reads nothing from the store.
func (p *Pipeline) statusSince(kept *storeStatus) (storeStatus, error) {
	var out storeStatus
	err := p.db.View(func(tx *bolt.Tx) error {
		if kept != nil && kept.txid == tx.ID() {
			out = *kept
			return nil
		}
		st, err := p.statusIn(tx)
		out = storeStatus{st: st, txid: tx.ID()}
		return err
	})
	return out, err
}

// statusIn reads what the relay's status reports from tx.
func (p *Pipeline) statusIn(tx *bolt.Tx) (wire.Status, error) {
	st := wire.Status{Version: version.Get().Short()}
	h, err := p.gate.HaltState(tx)
	if err != nil {
		return st, err
	}
	st.Halted = h.Halted
	holds, err := p.gate.Holds(tx)
	if err != nil {
		return st, err
	}
	st.HeldCount = len(holds)
	for _, h := range holds[:min(len(holds), wire.MaxStatusHeld)] {
		st.Held = append(st.Held, wire.StatusHeld{Key: h.Action.LedgerKey(), Purpose: h.Action.Purpose, Reason: h.Reason, HeldAt: h.HeldAt.UTC()})
	}
	lost, err := p.ledger.LostHandOffs(tx)
	if err != nil {
		return st, err
	}
	st.LostCount, st.Lost = statusLost(lost)
	last, ok, err := p.lastWake(tx)
	if ok {
		st.LastWake = statusWake(last)
	}
	return st, err
}

// statusLost is the count and the newest wire.MaxStatusLost of the
// possibly lost hand-offs the ledger keeps, newest first.
func statusLost(s ledger.LostSummary) (int, []wire.StatusLost) {
	var out []wire.StatusLost
	for i := len(s.Kept) - 1; i >= 0 && len(out) < wire.MaxStatusLost; i-- {
		l := s.Kept[i]
		out = append(out, wire.StatusLost{ObjectID: l.ObjectID, Issuer: l.Issuer, Purpose: l.Purpose, Seq: l.Seq, RecordedAt: l.RecordedAt.UTC()})
	}
	return s.Count(), out
}

// statusWake is r as a status reports it.
func statusWake(r WakeReport) *wire.StatusWake {
	sw := &wire.StatusWake{At: r.At.UTC(), Reason: r.Reason, AwakeMs: r.Awake.Milliseconds()}
	for _, ph := range r.Phases {
		sw.Phases = append(sw.Phases, wire.StatusPhase{Name: ph.Name, StartMs: ph.Start.Milliseconds(), Ms: ph.Duration.Milliseconds(), Err: ph.Err})
	}
	return sw
}
