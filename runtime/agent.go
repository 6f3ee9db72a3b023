package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/runtime/trusted"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/sleeptime"
	"github.com/torpor-dev/torpor/wake/timer"
)

// Agent is the device daemon's life: the duty cycle around the pipeline.
type Agent struct {
	cfg    Config
	log    *slog.Logger
	clock  clock.Clock
	meter  sleeptime.Meter
	window wake.Window

	db      *bolt.DB
	pipe    *Pipeline
	trusted *trusted.Clock // the time expiry is judged by; nil without Config.TrustedTime
	// drained is how many records the last wake acknowledged (its
	// report's Drain.Acked); only Run's goroutine, which runs the wakes
	// and the sleeps, reads and writes it.
	drained int

	mu sync.Mutex
	// mu guards all following fields.
	mode      wake.Mode
	sched     time.Time     // scheduled wake in sleep mode
	changed   chan struct{} // closed and replaced when the mode changes
	opened    time.Duration // how long opening took, reported by the first wake
	lastPulse time.Time
	cur       *wakeRun // the wake in progress, for live requests to report into
	mgmt      Management
	stop      context.CancelCauseFunc // ends Run (Restart)
	restart   bool                    // Restart was called
	// pendingRestart is why the agent restarts at the end of its next
	// wake: a build an owner's confirmation installed while no wake was
	// in progress (restartAfterInstall).
	pendingRestart string
	// secondFrom is the end of the window's wake in which the window took
	// the wake second the relay assigned (adoptWakeSecond): a window that
	// opened before it is not planned, it is the window already awake.
	secondFrom time.Time
	// signed is the card the agent signed last (Agent.card), relayCard
	// the wire.CardDigest of the card the relay's last state-ok said it
	// holds (nil: unknown, or none).
	signed    signedCard
	relayCard []byte
	// knownHeld is the wire.HeldDigest of the last Held a state-ok named
	// (nil: none yet), which the states publishing no KeyPackage name so
	// that the relay leaves out a Held the agent knows.
	knownHeld []byte
}

// New checks cfg and returns an agent. Run starts it.
func New(cfg Config) (*Agent, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: cfg.logger().With("component", "agent"), clock: clock.Or(cfg.Clock),
		window: cfg.window(), mode: cfg.Schedule.Mode, sched: cfg.Schedule.ScheduledWake, changed: make(chan struct{}), mgmt: cfg.Management}
	a.meter = sleeptime.Meter{Clock: cfg.Clock, Kernel: cfg.Hooks.Kernel}
	return a, nil
}

// Run runs the duty cycle until ctx ends: open bbolt, then wake, drain,
// stay live to the window's end, sleep, and again. It returns nil when ctx
// ended, or an error that makes running impossible (the store cannot be
// opened, is corrupt or missing after the device ran before
// (ErrStoreRefused), is not private (ErrNotPrivate) or belongs to another
// key, no wake source works).
//
// After Restart it returns ErrRestart instead of nil.
func (a *Agent) Run(parent context.Context) error {
	ctx, stop := context.WithCancelCause(parent)
	defer stop(nil)
	a.mu.Lock()
	a.stop = stop
	if a.restart {
		stop(ErrRestart)
	}
	a.mu.Unlock()
	if err := a.open(); err != nil {
		return err
	}
	defer a.close()
	why := cause{reason: "boot"}
	for ctx.Err() == nil {
		// Subscribe to mode changes before reading the mode: a change
		// between the two still ends the sleep or wake planned here.
		changed := a.modeChanged()
		now := a.clock.Now()
		mode, start, end := a.plan(now)
		if why.reason == "boot" && (start.IsZero() || now.Before(start)) {
			// Booted outside a window: tell the relay the mode and drain
			// now, without staying live, then sleep as planned.
			a.wake(ctx, changed, mode, why, now.Add(a.windowLength()), false)
			why = cause{reason: "planned"}
			continue
		}
		if start.IsZero() || now.Before(start) {
			w, err := a.sleep(ctx, changed, start)
			switch {
			case ctx.Err() != nil:
				return ended(ctx)
			case errors.Is(err, errReplan):
				why = cause{reason: "mode"}
				continue
			case err != nil:
				return err
			}
			why = cause{reason: w.Reason.String(), detail: w.Detail, slept: w.Slept}
			now = a.clock.Now()
			if mode, start, end = a.plan(now); start.IsZero() || now.Before(start) {
				// Woken early (an event source): a window of the
				// configured length from now.
				end = now.Add(a.windowLength())
			}
		}
		a.wake(ctx, changed, mode, why, end, true)
		why = cause{reason: "mode"}
	}
	return ended(ctx)
}

func (a *Agent) windowLength() time.Duration {
	if w := a.Window(); w.Length != 0 {
		return w.Length
	}
	return wake.DefaultLength
}

// errReplan ends a sleep because the mode changed.
var errReplan = errors.New("runtime: mode changed")

// open opens bbolt and the pipeline, and restores the cycle state.
func (a *Agent) open() error {
	t := a.clock.Now()
	fresh, err := a.guardStore()
	if err != nil {
		return err
	}
	db, err := a.openStore()
	if err != nil {
		return err
	}
	// The store holds the MLS sessions' private state, the unused
	// KeyPackages' private keys, the replay cache and the ledger.
	if err := session.CheckPrivate(a.cfg.dbPath()); err != nil {
		db.Close()
		return err
	}
	if err := a.checkIdentity(db); err != nil {
		db.Close()
		return err
	}
	if a.cfg.MLS.OpenMLS != nil && a.cfg.Sessions == nil {
		s, kp, err := a.cfg.MLS.OpenMLS(db)
		if err != nil {
			db.Close()
			return fmt.Errorf("runtime: MLS sessions: %w", err)
		}
		a.cfg.Sessions, a.cfg.MLS.KeyPackages = s, kp
	}
	if err := a.openTrusted(db); err != nil {
		db.Close()
		return err
	}
	pc := a.cfg.PipelineConfig
	if u := a.cfg.Relay.Updates; u != nil && (u.OnVerified != nil || u.Rauc != nil) && pc.UpdateInstall == nil {
		pc.UpdateInstall = a.installVerified // a held update the owner confirms
	}
	pipe, err := OpenPipeline(db, pc)
	if err != nil {
		db.Close()
		return err
	}
	a.mu.Lock()
	a.db, a.pipe = db, pipe
	a.mu.Unlock()
	if err := a.restore(); err != nil {
		a.close()
		return err
	}
	a.writeMarker(fresh)
	a.mu.Lock()
	a.opened = a.clock.Now().Sub(t)
	a.mu.Unlock()
	return nil
}

func (a *Agent) close() {
	a.closeManagement()
	a.mu.Lock()
	p, db := a.pipe, a.db
	a.pipe, a.db = nil, nil
	a.mu.Unlock()
	if p != nil {
		if err := p.RecordWake(); err != nil {
			a.log.Error("recording the last wake", "err", err)
		}
		p.Close()
	}
	if db != nil {
		db.Close()
	}
}

// restore reads the cycle state: a mode changed at runtime holds unless
// the configured mode changed since; the wake minute kept at a key
// rotation holds; a wake planned before a power-off that passed unnoticed
// is logged.
func (a *Agent) restore() error {
	return a.db.View(func(tx *bolt.Tx) error {
		c, err := loadCycle(tx)
		if err != nil {
			return err
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if c.Mode != "" && c.ConfigMode == a.cfg.Schedule.Mode {
			a.mode, a.sched = c.Mode, c.ScheduledWake
		}
		if c.WindowSet && c.ConfigLength == a.cfg.Schedule.WindowLength && c.ConfigOffset == a.cfg.Schedule.WindowOffset {
			a.window.Length, a.window.Offset = c.Length, c.Offset
		}
		if c.MinuteSet { // the first identity's, kept across key rotations
			a.window.Minute = c.Minute
		}
		if c.SecondSet {
			a.window.Second = c.Second
		}
		if err := a.lostRecord(tx, &c); err != nil {
			return err
		}
		if now := a.clock.Now(); !c.NextWake.IsZero() && now.After(c.NextWake) {
			a.log.Warn("resumed after the planned wake (powered off or stopped)",
				"plannedWake", c.NextWake.UTC().Format(time.RFC3339), "late", now.Sub(c.NextWake).Round(time.Second),
				"lastWake", c.LastWake.UTC().Format(time.RFC3339))
		}
		return nil
	})
}

// lostRecord says when the last wake's record was lost: a wake's record
// waits in memory for the next wake's pulse (record.go), and a crash or a
// power cut while it waits loses it. The chain head then is a pulse made
// after the last recorded wake ended; its next wake is the one that wake
// planned, which c takes for the check of a missed wake.
func (a *Agent) lostRecord(tx *bolt.Tx, c *cycle) error {
	_, head, ok, err := a.pipe.chain.Head(tx)
	if err != nil || !ok {
		return err
	}
	last, recorded, err := LastWake(tx)
	if err != nil {
		return err
	}
	if recorded && !head.At.After(last.At.Add(last.Awake)) {
		return nil
	}
	a.log.Warn("the last wake's report was not recorded (the agent stopped or lost power before it)",
		"pulseAt", head.At.UTC().Format(time.RFC3339), "pulseSeq", head.Seq)
	c.LastWake, c.NextWake = head.At, head.NextWake
	return nil
}

// Pipeline returns the agent's pipeline (nil before Run opened it).
func (a *Agent) Pipeline() *Pipeline {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pipe
}

// Mode returns the mode in force and the scheduled wake (sleep mode).
func (a *Agent) Mode() (wake.Mode, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mode, a.sched
}

// SetMode changes the reachability mode at runtime (and, in sleep mode, the
// one scheduled wake; zero for none). The change persists across restarts
// until the configured mode changes. A sleeping agent re-plans at once; an
// awake one ends its wake, announcing the new mode, and re-plans.
func (a *Agent) SetMode(m wake.Mode, scheduled time.Time) error {
	if !m.Valid() {
		return fmt.Errorf("runtime: invalid mode %q", m)
	}
	err := a.updateCycle(func(c *cycle) { c.Mode, c.ConfigMode, c.ScheduledWake = m, a.cfg.Schedule.Mode, scheduled })
	if err != nil {
		return fmt.Errorf("runtime: recording mode: %w", err)
	}
	a.mu.Lock()
	a.mode, a.sched = m, scheduled
	a.replanLocked()
	a.mu.Unlock()
	a.log.Info("mode changed", "mode", m)
	return nil
}

func (a *Agent) modeChanged() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed
}

// plan returns the mode in force and the window of the next wake at or
// after now: start zero means no planned wake (sleep mode without a
// scheduled one: only an event source wakes the agent); end zero means the
// wake has no end (always_on, session).
func (a *Agent) plan(now time.Time) (m wake.Mode, start, end time.Time) {
	m, sched := a.Mode()
	switch m {
	case wake.AlwaysOn, wake.Session:
		return m, now, time.Time{}
	case wake.HourlyWake:
		win := a.Window()
		start, end = win.Next(now)
		if start.Before(a.secondAdopted()) {
			start, end = win.Next(end)
		}
		return m, start, end
	}
	length := a.windowLength()
	if sched.IsZero() || !now.Before(sched.Add(length)) {
		return m, time.Time{}, time.Time{}
	}
	return m, sched, sched.Add(length)
}

// nextWake returns the wake planned after a window ending at end.
func (a *Agent) nextWake(end time.Time) time.Time {
	m, start, _ := a.plan(end)
	if m == wake.AlwaysOn || m == wake.Session {
		return time.Time{}
	}
	return start
}

// freeOSMemory returns to the kernel the heap a wake that drained records
// used and freed, before a sleep that keeps the process. Go keeps about
// its heap's goal in RAM while the agent sleeps (its scavenger returns
// only what lies beyond it): after a 500-record drain, 3–4 MiB more than
// the agent holds live (docs/footprint.md, "Against issue 32's start").
// One forced collection gives it back. An empty wake skips it: its heap
// stays under Go's smallest goal, and the collection would cost more CPU
// than the wake itself.
func (a *Agent) freeOSMemory() {
	if a.drained == 0 {
		return
	}
	if f := a.cfg.Hooks.FreeOSMemory; f != nil {
		f()
		return
	}
	debug.FreeOSMemory()
}

// DrainGCPercent is the garbage collector's target (GOGC) while the agent
// drains records. With the default of 100 the Go heap grows to at least
// 4 MiB before each collection (the runtime's smallest goal, scaled by
// GOGC: https://go.dev/doc/gc-guide#GOGC), where a drain keeps about
// 1 MiB live: at 50 its goal is 2 MiB, and the drain's peak resident
// memory about 1.7 MiB lower, for a collection every 1 MiB allocated
// instead of every 3 (docs/footprint.md, "The collector's target while
// draining"). An empty wake, which allocates well under the smallest goal,
// keeps the default.
const DrainGCPercent = 50

// lowerGC sets the collector's target to DrainGCPercent for a drain of
// records and returns what sets it back. A target already at or below it
// (GOGC=25, or off) is kept.
func (a *Agent) lowerGC() (restore func()) {
	set := a.cfg.Hooks.SetGCPercent
	if set == nil {
		set = debug.SetGCPercent
	}
	old := set(DrainGCPercent)
	if old <= DrainGCPercent { // off is -1
		set(old)
		return func() {}
	}
	return func() { set(old) }
}

// sleep arms the wake sources until until (zero: until an event) and
// blocks. It returns errReplan when changed is closed (the mode changed)
// meanwhile.
func (a *Agent) sleep(ctx context.Context, changed <-chan struct{}, until time.Time) (wake.Wake, error) {
	sources := a.cfg.Schedule.Sources
	if len(sources) == 0 {
		sources = []wake.Source{&timer.Source{Clock: a.cfg.Clock, Kernel: a.cfg.Hooks.Kernel}}
	}
	if !wake.Any(sources).KeepsProcess() {
		// The wake's record would wait for the next wake's pulse in
		// memory, which this sleep may not keep (a power-off).
		if err := a.pipe.RecordWake(); err != nil {
			a.log.Error("recording the wake", "err", err)
		}
	} else {
		a.freeOSMemory()
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-changed:
			cancel()
		case <-sctx.Done():
		}
	}()
	w, err := wake.First(sctx, until, sources...)
	if err != nil && ctx.Err() == nil && sctx.Err() != nil {
		return wake.Wake{}, errReplan
	}
	if err != nil {
		return w, fmt.Errorf("runtime: waiting for a wake: %w", err)
	}
	return w, nil
}
