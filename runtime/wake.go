package runtime

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/sleeptime"
)

// PulseInterval is how often an agent that never sleeps (always_on,
// session) publishes a liveness pulse.
const PulseInterval = time.Hour

// announceTimeout bounds the publish that announces the next wake, after
// the window closed; stopAnnounceTimeout bounds it when the agent stops
// (Run's context ended during the wake: SIGTERM), so that a relay that
// does not answer holds the stop up only briefly.
const (
	announceTimeout     = 10 * time.Second
	stopAnnounceTimeout = 5 * time.Second
)

// wakeRun is the state of one wake.
type wakeRun struct {
	a    *Agent
	ctx  context.Context // ends at the window's end or a mode change
	ph   *phases
	rep  *WakeReport
	kps  [][]byte
	lr   []byte        // the last-resort KeyPackage until the relay confirms it
	kick chan struct{} // the window's end moved (Extend)
	// restate asks the live wake to publish its state again now
	// (StatusChanged).
	restate chan struct{}
	sched   <-chan struct{}
	isLive  bool // the wake stays linked until the window's end

	// drainMu serialises drains (the wake's own and Agent.Drain) and
	// guards the link and the cursor against the redial that replaces
	// them. The wake's goroutine, the only writer, reads them without it.
	drainMu  sync.Mutex
	l        Link
	after    uint64 // drain cursor on the current link
	fresh    bool   // nothing was drained on the current link yet
	storeErr error  // a batch failed in the store: no more drains this wake

	mu sync.Mutex
	// mu guards the following fields and rep.Drain, rep.Live, rep.End and
	// rep.NextWake: live requests, commands and Extend run beside the
	// wake.
	mode    wake.Mode
	next    time.Time // the next wake after this one
	end     time.Time // the window's end; zero for none
	retired bool      // the identity was rotated away: publish nothing more
	ending  bool      // past staying live: announcing, then asleep
	pulse   []byte    // the wake's latest pulse; nil before it is made
	// pulseMode and pulseNext are the mode and next wake the pulse names.
	pulseMode wake.Mode
	pulseNext time.Time
	// sentCard is the wire.CardDigest of the card the relay accepted over
	// the link in use, sentPulse the pulse it accepted; nil before that
	// and after a redial (sentCard also after a retirement published
	// another card).
	sentCard, sentPulse []byte
	// answered is whether a state-ok came over the link in use: the link
	// server then knows what Held it named (wire.State.HeldDigest is
	// for a new link's first state).
	answered bool
	// sentStatus is the content of the status the relay accepted over the
	// link in use (wakeRun.status); "" before that and after a redial.
	sentStatus string
	// sentSched is the schedule of the last state the relay accepted over
	// the link in use; zero before that and after a redial.
	sentSched stateSchedule
	// stored is what the wake's last status read from the store; nil
	// before the first (statusContent).
	stored *storeStatus

	// health is the board's health, read once a wake (wakeRun.health).
	healthOnce sync.Once
	health     *wire.StatusHealth
	// update is the outcome of the wake's update check (updatecheck.go);
	// nil before it.
	update *wire.StatusUpdate
	// osUpdate is the wake's check for rauc bundles (Updates.Rauc).
	osUpdate *wire.StatusUpdate
	// offer is the update the relay's latest state-ok offered; nil for
	// none (updatecheck.go). checked is the offer the last update check
	// had; newOffer tells a live wake that a state-ok carried an offer.
	offer, checked *wire.Offer
	newOffer       chan struct{}
	// restart, when not "", is why the agent restarts once this wake
	// ended: an update was installed (wakeRun.install).
	restart string
}

// addDrain adds a batch's report (a drain's or a live request's).
func (w *wakeRun) addDrain(rep drain.Report, live bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rep.Drain.Add(rep)
	if live {
		w.rep.Live++
	}
}

// schedule returns the wake's mode and the next wake it plans.
func (w *wakeRun) schedule() (wake.Mode, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mode, w.next
}

// announcement is what one state frame and the card in it announce: read
// once, so that the two agree (the relay refuses a card whose mode
// disagrees with the state it comes with) even when the schedule changes
// meanwhile.
type announcement struct {
	mode   wake.Mode
	next   time.Time // zero: no planned wake
	window wake.Window
	pulse  []byte // nil: no pulse yet in this wake
}

// announcement returns what the wake announces now.
func (w *wakeRun) announcement() announcement {
	win := w.a.Window() // before w.mu: the lock order is a.mu, then w.mu
	w.mu.Lock()
	defer w.mu.Unlock()
	return announcement{mode: w.mode, next: w.next, window: win, pulse: w.pulse}
}

func (w *wakeRun) setSchedule(m wake.Mode, next time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mode, w.next = m, next
	w.rep.NextWake = next
}

// cause is what ended the sleep before a wake.
type cause struct {
	reason string // boot, timer, rtc, gpio, unknown, mode
	detail string // how the wake source knew (wake.Wake.Detail)
	slept  sleeptime.Span
}

// wake runs one wake: link, pulse and KeyPackages in parallel; card; the
// state published while the queue drains; live to the window's end; the
// next wake announced. Every phase is measured and the wake logged once.
// Without live, the wake ends once the state is published and the queue
// drained (unless Extend asked for more).
func (a *Agent) wake(ctx context.Context, changed <-chan struct{}, mode wake.Mode, why cause, end time.Time, live bool) {
	start := a.clock.Now()
	w := &wakeRun{a: a, mode: mode, next: a.nextWake(end), end: end, sched: changed, isLive: live, kick: make(chan struct{}, 1), restate: make(chan struct{}, 1), newOffer: make(chan struct{}, 1),
		ph:  &phases{clock: a.clock, start: start, onPhase: a.cfg.Hooks.OnPhase},
		rep: &WakeReport{At: start.UTC(), Reason: why.reason, WakeDetail: why.detail, Mode: string(mode), End: end, Slept: why.slept}}
	w.rep.NextWake = w.next
	a.mu.Lock()
	w.restart, a.pendingRestart = a.pendingRestart, ""
	a.mu.Unlock()
	var cancel context.CancelFunc
	w.ctx, cancel = w.windowContext(ctx, changed)
	defer cancel()
	a.log.Info("waking", w.startAttrs()...)
	a.mu.Lock()
	if a.opened > 0 {
		w.ph.list = append(w.ph.list, Phase{Name: PhaseOpen, Duration: a.opened})
		a.opened = 0
	}
	a.cur = w
	a.mu.Unlock()

	mgmt := a.management()
	w.prepare(start, mgmt)
	if w.l != nil {
		w.publishAndDrain()
		w.checkUpdate()
		if w.live() && w.restarting() == "" {
			w.stayLive()
		}
	}
	w.mu.Lock()
	w.ending = true // Extend can no longer keep this wake open
	w.mu.Unlock()
	if w.l != nil {
		w.announce(ctx)
	}
	if mgmt != nil && ctx.Err() == nil {
		_, next := w.schedule()
		w.ph.measure(PhaseManagement, func() error { mgmt.Asleep(ctx, next); return nil })
	}
	if w.l != nil {
		w.ph.measure(PhaseClose, w.l.Close)
		w.countTraffic(w.l)
	}
	a.mu.Lock()
	a.cur = nil // before the report is out: whoever reads it finds the agent asleep
	a.mu.Unlock()
	w.rep.Phases = w.ph.done()
	w.rep.Awake = a.clock.Now().Sub(start)
	w.mu.Lock()
	rep := *w.rep
	w.mu.Unlock()
	a.record(&rep)
	a.drained = rep.Drain.Acked
	if why := w.restarting(); why != "" {
		a.Restart(why) // Run returns ErrRestart; its deferred close closes the stores
	}
}

// startAttrs are the attributes of the line logged when a wake begins.
func (w *wakeRun) startAttrs() []any {
	attrs := []any{"reason", w.rep.Reason}
	if w.rep.WakeDetail != "" {
		attrs = append(attrs, "wakeDetail", w.rep.WakeDetail)
	}
	attrs = append(attrs, "mode", w.rep.Mode)
	if !w.end.IsZero() {
		attrs = append(attrs, "windowEnd", w.end.UTC().Format(time.RFC3339))
	}
	return attrs
}

// live reports whether the wake stays linked to the window's end: a
// window's wake does, and so does a short wake (booted outside the window)
// that an operator extended.
func (w *wakeRun) live() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.isLive
}

// prepare runs the first phases: the dial on a goroutine of its own, the
// management channel's start on another; meanwhile, on the wake's
// goroutine, the KeyPackage refill and the outbox's settling, then the
// pulse once the first dial ended. Those are local work on the store,
// whose write transactions bbolt runs one at a time anyway, so they run
// one after the other rather than on goroutines of their own: fewer
// goroutines and hand-offs per wake (docs/performance.md). A link that
// came up establishes the wake's trusted time first, and the pulse's
// transaction commits its floor too: one commit where there were two; a
// wake whose first dial failed makes its pulse at once, without waiting
// for the relay.
func (w *wakeRun) prepare(start time.Time, mgmt Management) {
	a := w.a
	var wg sync.WaitGroup
	if mgmt != nil {
		wg.Go(func() { mgmt.Awake(w.ctx) })
	}
	var once sync.Once
	tried := make(chan struct{}) // closed when the first dial ended
	wg.Go(func() {
		w.ph.measure(PhaseLink, func() error {
			l, err := a.dial(w.ctx, w.rep, func() { once.Do(func() { close(tried) }) })
			w.drainMu.Lock()
			w.l, w.fresh = l, true
			w.drainMu.Unlock()
			once.Do(func() { close(tried) })
			return err
		})
	})
	w.localPhases()
	<-tried
	w.drainMu.Lock()
	linked := w.l != nil
	w.drainMu.Unlock()
	var floor func(*bolt.Tx) error
	if linked {
		floor = w.establishTime()
	}
	w.pulsePhase(start, floor)
	wg.Wait()
	if !linked && w.l != nil { // linked after a failed first dial
		if commit := w.establishTime(); commit != nil {
			if err := a.pipe.db.Update(commit); err != nil {
				a.log.Error("keeping the trusted time's floor", "err", err)
			}
		}
	}
}

// pulsePhase makes and commits the wake's pulse, with also (nil: nothing
// more) in its transaction, and runs the held actions a fresh pulse may
// free.
func (w *wakeRun) pulsePhase(start time.Time, also func(*bolt.Tx) error) {
	a := w.a
	if w.ph.measure(PhasePulse, func() error { return w.makePulse(start, also) }) == nil {
		// A fresh pulse ends a liveness suspension: held actions the
		// policy allows run now (prospective: only unstarted ones were
		// held).
		if _, err := a.pipe.Redecide(w.ctx); err != nil {
			a.log.Error("running held actions after the pulse", "err", err)
		}
	}
}

// localPhases refills the KeyPackage pool and settles the outbox.
func (w *wakeRun) localPhases() {
	a := w.a
	if a.cfg.MLS.KeyPackages != nil {
		w.ph.measure(PhaseKeyPackages, func() error {
			var err error
			w.kps, err = a.cfg.MLS.KeyPackages.Refill(w.ctx, a.cfg.kpTarget())
			if err == nil {
				w.lr, err = w.lastResort()
			}
			return err
		})
	}
	w.ph.measure(PhaseRecover, func() error {
		var err error
		w.rep.Recovery, err = a.pipe.drainer.Recover(w.ctx)
		if r := w.rep.Recovery; r.Failed > 0 {
			a.log.Warn("hand-off failed again; kept in the outbox for the next wake",
				"failed", r.Failed, "redelivered", r.Redelivered)
		}
		return cmp.Or(err, a.pipe.logLost(a.log))
	})
}

// makePulse makes, commits and keeps the wake's next pulse; the states the
// wake publishes from now on carry it.
func (w *wakeRun) makePulse(now time.Time, also func(*bolt.Tx) error) error {
	mode, next := w.schedule()
	doc, _, err := w.a.pipe.pulse(now, next, string(mode), also)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.pulse, w.pulseMode, w.pulseNext = doc, mode, next
	w.mu.Unlock()
	w.a.mu.Lock()
	w.a.lastPulse = now
	w.a.mu.Unlock()
	return nil
}

// stayLive stays linked until the window ends: draining what is queued
// meanwhile, redialing a dropped link with backoff, pulsing hourly when
// the agent never sleeps.
func (w *wakeRun) stayLive() {
	a := w.a
	var pulseT clock.Timer
	var pulseC <-chan time.Time
	if m, _ := w.schedule(); m == wake.AlwaysOn || m == wake.Session {
		pulseT = a.clock.NewTimer(PulseInterval)
		pulseC = pulseT.C()
	}
	defer func() {
		if pulseT != nil {
			pulseT.Stop()
		}
	}()
	w.ph.measure(PhaseLive, func() error {
		for {
			select {
			case <-w.ctx.Done():
				return nil
			case <-w.l.Queued():
				w.drain()
			case <-w.restate:
				w.publish()
			case <-w.newOffer:
				if w.offerChanged() {
					w.checkUpdate() // an offer that came with a pulse or a restated status
				}
				if w.restarting() != "" {
					return nil
				}
			case <-pulseC:
				if err := w.makePulse(a.clock.Now(), nil); err == nil {
					w.publish()
				}
				pulseT = a.clock.NewTimer(PulseInterval)
				pulseC = pulseT.C()
			case <-w.l.Done():
				if !w.redial() {
					return nil
				}
				w.publishAndDrain()
			}
		}
	})
}

// redial replaces a link that dropped, retrying until the window ends. It
// reports whether a new link is up.
func (w *wakeRun) redial() bool {
	w.drainMu.Lock()
	w.l.Close()
	w.countTraffic(w.l)
	w.l = closedLink{} // a drain meanwhile finds no link
	w.drainMu.Unlock()
	w.forgetSent()
	l, err := w.a.dial(w.ctx, w.rep, nil)
	if err != nil {
		return false
	}
	w.drainMu.Lock()
	w.l, w.after, w.fresh = l, 0, true
	w.drainMu.Unlock()
	return true
}

// publishAndDrain publishes the state and drains the queue in parallel:
// neither needs the other. The drain runs on a goroutine of its own, the
// publish on the wake's.
func (w *wakeRun) publishAndDrain() {
	var wg sync.WaitGroup
	wg.Go(func() { w.drain() })
	w.publishFirst()
	wg.Wait()
}

// publishFirst publishes the state with the KeyPackages the wake made,
// and the card when the relay does not hold it.
func (w *wakeRun) publishFirst() {
	an := w.announcement()
	var card outCard
	if w.ph.measure(PhaseCard, func() error {
		var err error
		card, err = w.cardFor(an)
		return err
	}) != nil {
		return
	}
	w.ph.measure(PhasePublish, func() error { return w.publishState(w.ctx, an, card, w.kps) })
}

// publish sends the state again within a wake (the hourly pulse of a
// wake that never ends, an undone rotation), with the KeyPackages not yet
// published: such a wake has no next one to carry those that
// refill-keypackages made, or the replacements of expired ones.
func (w *wakeRun) publish() {
	an := w.announcement()
	card, err := w.cardFor(an)
	if err == nil {
		err = w.publishState(w.ctx, an, card, w.unpublished())
	}
	if err != nil {
		w.a.log.Warn("publishing state", "err", err)
	}
}

// unpublished refills the KeyPackage pool and returns the KeyPackages not
// yet published; nil without a pool or when the refill fails (logged: the
// state goes out anyway).
func (w *wakeRun) unpublished() [][]byte {
	if w.a.cfg.MLS.KeyPackages == nil {
		return nil
	}
	kps, err := w.a.cfg.MLS.KeyPackages.Refill(w.ctx, w.a.cfg.kpTarget())
	if err != nil {
		w.a.log.Warn("refilling KeyPackages", "err", err)
		return nil
	}
	if w.lr, err = w.lastResort(); err != nil {
		w.a.log.Warn("replacing the last-resort KeyPackage", "err", err)
	}
	return kps
}

// lastResort returns the last-resort KeyPackage to publish, made or
// replaced as due; nil when the relay holds it already or the pool keeps
// none (LastResortKeyPackages).
func (w *wakeRun) lastResort() ([]byte, error) {
	lr, ok := w.a.cfg.MLS.KeyPackages.(LastResortKeyPackages)
	if !ok {
		return nil, nil
	}
	return lr.LastResort(w.ctx)
}

// lastResortHeld records the last-resort KeyPackage the relay's state-ok
// names, and forgets the one to publish once the relay holds it.
func (w *wakeRun) lastResortHeld(ctx context.Context, held *wire.Held) error {
	lr, ok := w.a.cfg.MLS.KeyPackages.(LastResortKeyPackages)
	if !ok || held == nil {
		return nil
	}
	if err := lr.LastResortHeld(ctx, held.LastResort); err != nil {
		return err
	}
	if w.lr != nil && bytes.Equal(wire.KeyPackageDigest(w.lr), held.LastResort) {
		w.lr = nil
	}
	return nil
}

// publishState sends one state frame announcing an, with card (when the
// relay does not hold it) and kps; KeyPackages the relay accepted are
// marked published. When the relay's answer names another card than the
// one left out (it lost it, or holds an older one), the card follows at
// once in a second state frame. When the answer shows that the relay
// handed out KeyPackages since the last publish (senders fetched them),
// the pool is refilled and the new ones published at once in another,
// so that the relay's pool is whole again while the device sleeps.
func (w *wakeRun) publishState(ctx context.Context, an announcement, card outCard, kps [][]byte) error {
	taken, holds, err := w.publishOnce(ctx, an, card, kps)
	if err == nil && !holds {
		w.a.log.Info("the relay holds another card; sending it")
		card.send = true
		var more int
		more, _, err = w.publishOnce(ctx, an, card, nil)
		taken += more
	}
	if err != nil || taken == 0 || w.a.cfg.MLS.KeyPackages == nil {
		return err
	}
	more, err := w.a.cfg.MLS.KeyPackages.Refill(ctx, w.a.cfg.kpTarget())
	if err != nil || len(more) == 0 {
		return err
	}
	w.a.log.Info("key packages replaced", "handedOut", taken, "published", len(more))
	card.send = false // the relay holds the card now
	_, _, err = w.publishOnce(ctx, an, card, more)
	return err
}

// outCard is the card a state announces: raw, signed for the bounds in
// force, and its wire.CardDigest; send is whether the state carries it.
type outCard struct {
	raw, digest []byte
	send        bool
}

// cardFor returns the card for an, sent only when the relay does not hold
// it: its last state-ok named it (Agent.relayHolds), or it accepted it
// over this link. The card names nothing that changes between wakes
// (Agent.card), so an empty wake sends none, and a relay that predates
// wire.Accepted.CardDigest gets it once a wake.
func (w *wakeRun) cardFor(an announcement) (outCard, error) {
	raw, digest, err := w.a.card(an.mode, w.l.Hello())
	if err != nil {
		return outCard{}, err
	}
	w.mu.Lock()
	onLink := bytes.Equal(w.sentCard, digest)
	w.mu.Unlock()
	return outCard{raw: raw, digest: digest, send: !onLink && !w.a.relayHolds(digest)}, nil
}

// forgetSent records that the relay may not hold the card, pulse and
// status the wake sent: a new link, perhaps to another relay.
func (w *wakeRun) forgetSent() {
	w.mu.Lock()
	w.sentCard, w.sentPulse, w.sentStatus, w.sentSched = nil, nil, "", stateSchedule{}
	w.answered = false
	w.mu.Unlock()
}

// publishOnce sends one state frame and returns how many published
// KeyPackages the relay's answer shows handed out, and whether the relay
// holds card now.
func (w *wakeRun) publishOnce(ctx context.Context, an announcement, card outCard, kps [][]byte) (int, bool, error) {
	if w.isRetired() {
		return 0, true, nil
	}
	status, content := w.status()
	st := w.state(an, card, kps, status)
	ok, err := w.l.Publish(ctx, st)
	if err != nil {
		return 0, false, err
	}
	w.mu.Lock()
	if card.send {
		w.sentCard = card.digest
	}
	if st.Pulse != nil {
		w.sentPulse = st.Pulse
	}
	if status != nil {
		w.sentStatus = content
	}
	w.sentSched = scheduleOf(st)
	holds := bytes.Equal(w.sentCard, card.digest) || bytes.Equal(ok.CardDigest, card.digest)
	w.answered = true
	w.offer = ok.Offer
	w.mu.Unlock()
	if ok.Offer != nil {
		select {
		case w.newOffer <- struct{}{}:
		default:
		}
	}
	w.a.setRelayCard(ok.CardDigest)
	w.a.learnHeld(ok.Held)
	taken, err := w.accepted(ctx, ok, kps)
	return taken, holds, err
}

// accepted takes in the relay's answer to a state that published kps: the
// wake second it assigned, the last-resort KeyPackage and the KeyPackages
// it holds. It returns how many published KeyPackages were handed out.
func (w *wakeRun) accepted(ctx context.Context, ok wire.Accepted, kps [][]byte) (int, error) {
	a := w.a
	if ok.WakeSecond != nil {
		if err := w.adoptWakeSecond(*ok.WakeSecond); err != nil {
			return 0, err
		}
	}
	if err := w.lastResortHeld(ctx, ok.Held); err != nil {
		return 0, err
	}
	if a.cfg.MLS.KeyPackages == nil || (len(kps) == 0 && ok.Held == nil) {
		return 0, nil
	}
	var held [][]byte
	if ok.Held != nil {
		held = ok.Held.Digests
		if held == nil {
			held = [][]byte{} // the relay holds none
		}
	}
	taken, err := a.cfg.MLS.KeyPackages.Published(ctx, kps, held)
	if err != nil {
		return 0, err
	}
	if len(kps) > 0 {
		w.kps = nil
	}
	return taken, nil
}

// state is the state frame announcing an, with card when it is to be
// sent, kps and status. It carries an's pulse unless the relay accepted it
// over this link.
func (w *wakeRun) state(an announcement, card outCard, kps [][]byte, status []byte) wire.State {
	a := w.a
	pulse := an.pulse
	w.mu.Lock()
	if bytes.Equal(pulse, w.sentPulse) {
		pulse = nil
	}
	answered := w.answered
	w.mu.Unlock()
	var raw []byte
	if card.send {
		raw = card.raw
	}
	win := an.window
	st := wire.State{
		Mode:        string(an.mode),
		Window:      &wire.Window{Minute: win.Minute, LengthSec: int64(win.Length / time.Second), OffsetSec: int64(win.Shift() / time.Second)},
		Card:        raw,
		KeyPackages: kps,
		LastResort:  w.lr,
		Pulse:       pulse,
		Bounds:      &a.cfg.Relay.Bounds,
		Status:      status,
		Enrolment:   a.cfg.Relay.Enrolment,
	}
	if !an.next.IsZero() {
		st.NextWake = an.next.Unix()
	}
	if len(kps) == 0 && len(w.lr) == 0 && !answered {
		st.HeldDigest = a.heldKnown()
	}
	return st
}

// drain pulls and processes every queued record after the cursor, one
// batch (one bbolt transaction) at a time, and returns what it did. A
// store failure (drain.ErrStore) ends the drain for the rest of the wake:
// the batch was rolled back and nothing acknowledged, so the relay keeps
// its records, and the next wake drains them again rather than this one
// failing on them at every "queued".
func (w *wakeRun) drain() (drain.Report, error) {
	w.drainMu.Lock()
	defer w.drainMu.Unlock()
	var total drain.Report
	var restoreGC func() // set at the drain's first records
	defer func() {
		if restoreGC != nil {
			restoreGC()
		}
	}()
	err := w.ph.measure(PhaseDrain, func() error {
		if w.storeErr != nil {
			return fmt.Errorf("runtime: not draining again in this wake after a store failure: %w", w.storeErr)
		}
		if w.helloEmptyLocked() {
			return nil
		}
		for {
			t := w.a.clock.Now()
			recs, more, err := w.l.Pull(w.ctx, w.after, w.a.cfg.batchSize())
			pulled := drain.Report{Time: drain.Timing{Pull: w.a.clock.Now().Sub(t)}}
			total.Add(pulled)
			w.addDrain(pulled, false)
			if err != nil || len(recs) == 0 {
				return err
			}
			if restoreGC == nil {
				restoreGC = w.a.lowerGC()
			}
			rep, err := w.a.pipe.drainer.Batch(w.ctx, records(recs), w.l.Ack)
			logDiagnostics(w.a.log, rep.Diagnostics, msgRejected)
			total.Add(rep)
			w.addDrain(rep, false)
			if errors.Is(err, drain.ErrUntrusted) {
				w.a.log.Warn("drain held: no trusted time; nothing judged or acknowledged, the relay keeps the records",
					"records", len(recs), "firstSeq", recs[0].Seq, "err", err)
			}
			if errors.Is(err, drain.ErrStore) {
				w.storeErr = err
				w.a.log.Error("drain aborted: store failure; nothing acknowledged, the relay keeps the records for the next wake",
					"records", len(recs), "firstSeq", recs[0].Seq, "err", err)
			}
			if err != nil {
				return err
			}
			w.after = recs[len(recs)-1].Seq
			if !more {
				return nil
			}
		}
	})
	return total, err
}

// helloEmptyLocked reports whether the first drain on the link may skip
// its pull: the relay's hello said that it queued nothing for the device
// (link.Client.QueueEmpty), and no record was notified since (a record
// queued later comes on Queued, and the live wake drains it then). It is
// true at most once per link: a later drain pulls. An empty wake saves a
// round trip. w.drainMu must be held.
func (w *wakeRun) helloEmptyLocked() bool {
	fresh := w.fresh
	w.fresh = false
	e, ok := w.l.(interface{ QueueEmpty() bool })
	return fresh && ok && e.QueueEmpty() && len(w.l.Queued()) == 0
}

// Drain drains the relay's queue now, in the wake in progress, and returns
// what this drain did (the wake's report counts it too). The agent drains
// on its own when a wake begins and whenever the relay reports a record
// queued; Drain is an operator's "drain now", which also finds what such a
// drain left (a notification lost with a dropped link). The wake bounds
// it, and ctx before it starts. It returns ErrAsleep when no wake is in
// progress or the wake has no link to its relay.
func (a *Agent) Drain(ctx context.Context) (drain.Report, error) {
	a.mu.Lock()
	w := a.cur
	a.mu.Unlock()
	if w == nil || !w.linked() {
		return drain.Report{}, ErrAsleep
	}
	if err := ctx.Err(); err != nil {
		return drain.Report{}, err
	}
	return w.drain()
}

// linked reports whether the wake has a link to its relay and is not
// ending.
func (w *wakeRun) linked() bool {
	w.mu.Lock()
	ending := w.ending
	w.mu.Unlock()
	w.drainMu.Lock()
	defer w.drainMu.Unlock()
	_, closed := w.l.(closedLink)
	return w.l != nil && !closed && !ending
}

func records(rs []wire.Record) []drain.Record {
	out := make([]drain.Record, len(rs))
	for i, r := range rs {
		out[i] = drain.Record{Seq: r.Seq, From: r.From, ExpiresAt: time.Unix(0, r.ExpiresAt), Body: r.Body}
	}
	return out
}

// announce publishes the next wake after the window closed. A schedule
// changed during the wake (mode, scheduled wake, window) is announced as
// it now is, so the relay's answers to senders follow the change at once.
// The publish is a network round trip: its timeout runs on the unscaled
// clock (clock.Unscaled), not on the device's compressed day.
//
// The announce does not end with ctx: an agent that stops (SIGTERM ends
// Run's context) still tells the relay its last state and waits for the
// answer (within stopAnnounceTimeout when it stopped before the announce
// began) before it closes the link; the relay keeps that state after the
// link closed (transport/link/server).
func (w *wakeRun) announce(ctx context.Context) {
	if _, ok := w.l.(closedLink); ok || w.isRetired() {
		return
	}
	select {
	case <-w.sched:
		m, _ := w.a.Mode()
		w.setSchedule(m, w.a.nextWake(w.a.clock.Now()))
	default:
	}
	timeout, stopping := announceTimeout, ctx.Err() != nil
	if stopping {
		timeout = stopAnnounceTimeout
	}
	ctx, cancel := clock.WithTimeout(context.WithoutCancel(ctx), clock.Unscaled(w.a.clock), timeout)
	defer cancel()
	w.ph.measure(PhaseAnnounce, func() error {
		if w.pulseStale() {
			// The signed word of the next wake is the pulse's: a schedule
			// changed during the wake gets a pulse that names it.
			if err := w.makePulse(w.a.clock.Now(), nil); err != nil {
				w.a.log.Warn("making the pulse of the changed schedule", "err", err)
			}
		}
		an := w.announcement()
		card, err := w.cardFor(an)
		// A stopping agent's last state is sent even when the relay holds
		// all it says: it is the agent's last word, and the relay's record
		// of when it last heard from the device.
		if err != nil || (!stopping && w.relayHoldsAll(an, card)) {
			return err
		}
		return w.publishState(ctx, an, card, nil)
	})
}

// relayHoldsAll reports whether the relay accepted, over the link in use,
// everything a state announcing an would carry: the card, the pulse, the
// last-resort KeyPackage, the schedule (mode, window, next wake) and a
// status of the same content. Then the announce, the empty wake's last
// round trip, is not sent: the relay would store what it holds.
// What it costs: KeyPackages that senders fetched during the window are
// replaced at the next wake, not at the window's end (publishState).
func (w *wakeRun) relayHoldsAll(an announcement, card outCard) bool {
	st := w.state(an, card, nil, nil)
	if st.Card != nil || st.Pulse != nil || len(st.LastResort) > 0 || st.HeldDigest != nil {
		return false
	}
	w.mu.Lock()
	same := w.answered && w.sentSched == scheduleOf(st)
	w.mu.Unlock()
	if !same {
		return false
	}
	_, c, err := w.statusContent()
	return err == nil && w.statusHeld(c)
}

// stateSchedule is what a state frame says of when the device is reachable.
type stateSchedule struct {
	mode   string
	window wire.Window
	next   int64
}

// scheduleOf returns st's schedule.
func scheduleOf(st wire.State) stateSchedule {
	s := stateSchedule{mode: st.Mode, next: st.NextWake}
	if st.Window != nil {
		s.window = *st.Window
	}
	return s
}

// pulseStale reports whether the wake's pulse names another mode or next
// wake than the wake now plans (Extend, SetMode); false without a pulse.
func (w *wakeRun) pulseStale() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pulse != nil && (w.pulseMode != w.mode || !w.pulseNext.Equal(w.next))
}

// LinkPingInterval is how often the agent asks its relay to ping the link
// (wire.PingHeader): the longest interval a relay grants,
// wire.MaxPingInterval (50 s, under the 60 s a proxy in front of the
// relay allows an idle connection by default). Each ping wakes the agent
// (and on cellular its radio) in an otherwise idle window: at the relay's
// default of 30 s a five-minute window took ten, six at 50 s
// (docs/performance.md).
// The cost: a link that dies without closing (a NAT that forgot it, a
// relay host that lost power) is found after two intervals and 15 s,
// 115 s, rather than 75 s; one closed by either side is found at once,
// as before.
const LinkPingInterval = wire.MaxPingInterval

// unreachableLogEvery bounds how often dial logs that the relay is
// unreachable, on the agent's clock: the first failure is logged at once.
const unreachableLogEvery = time.Minute

// dial opens the device link, retrying with backoff and jitter until ctx
// ends (the window's end): a relay that cannot be reached costs only this
// window, and the next one drains what is queued. It logs the first
// failure at once, and then at most once every unreachableLogEvery.
func (a *Agent) dial(ctx context.Context, rep *WakeReport, failed func()) (Link, error) {
	dial := a.cfg.Hooks.Dial
	if dial == nil {
		dial = func(ctx context.Context, c link.Config) (Link, error) { return link.Dial(ctx, c) }
	}
	bo := &backoff{min: time.Second, max: time.Minute, rand: a.cfg.Hooks.Rand}
	var warned time.Time // when the last "relay unreachable" was logged
	for {
		rep.LinkAttempts++
		l, err := dial(ctx, link.Config{RelayURL: a.cfg.Relay.URL, Key: a.cfg.Key, Handler: a.live, Clock: a.cfg.Clock, PingInterval: LinkPingInterval})
		if err == nil {
			rep.LinkErr = ""
			a.linkedTime(l)
			return l, nil
		}
		rep.LinkErr = err.Error()
		if failed != nil {
			failed()
		}
		if now := a.clock.Now(); warned.IsZero() || now.Sub(warned) >= unreachableLogEvery {
			a.log.Warn("relay unreachable", "relay", a.cfg.Relay.URL, "attempt", rep.LinkAttempts, "err", err)
			warned = now
		}
		if err := clock.Sleep(ctx, a.clock, bo.next()); err != nil {
			return nil, fmt.Errorf("runtime: relay unreachable in this window after %d attempts: %s", rep.LinkAttempts, rep.LinkErr)
		}
	}
}

// record keeps the wake's report and the cycle state for the next commit
// (record.go: the next wake's pulse), logs the wake once and tells the
// Hooks.OnWake hook.
func (a *Agent) record(r *WakeReport) {
	a.pipe.keepWake(*r)
	r.log(a.log)
	if a.cfg.Hooks.OnWake != nil {
		a.cfg.Hooks.OnWake(*r)
	}
}

// countTraffic adds what l sent and received to the wake's report, when l
// counts it (*link.Client does).
func (w *wakeRun) countTraffic(l Link) {
	m, ok := l.(interface{ Traffic() link.Traffic })
	if !ok {
		return
	}
	t := m.Traffic()
	w.mu.Lock()
	w.rep.LinkSent += t.Sent
	w.rep.LinkReceived += t.Received
	w.mu.Unlock()
}

// closedLink stands for a link that dropped and could not be redialled
// before the window ended.
type closedLink struct{}

var errNoLink = errors.New("runtime: no link")

func (closedLink) Hello() queuebounds.Bounds { return queuebounds.Bounds{} }
func (closedLink) Publish(context.Context, wire.State) (wire.Accepted, error) {
	return wire.Accepted{}, errNoLink
}
func (closedLink) Pull(context.Context, uint64, int) ([]wire.Record, bool, error) {
	return nil, false, errNoLink
}
func (closedLink) Ack(context.Context, []uint64) error { return errNoLink }
func (closedLink) Queued() <-chan uint64               { return nil }
func (closedLink) Done() <-chan struct{}               { return nil }
func (closedLink) Close() error                        { return nil }
