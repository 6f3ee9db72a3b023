package runtime

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/wake/sleeptime"
)

// Phase names, in the order of a wake.
const (
	PhaseOpen        = "open"        // bbolt and the pipeline (first wake after boot)
	PhaseLink        = "link"        // dialing the device link (with retries)
	PhasePulse       = "pulse"       // signing the pulse, committing the chain head
	PhaseKeyPackages = "keypackages" // refilling the KeyPackage pool
	PhaseCard        = "card"        // building and signing the Agent Card
	PhasePublish     = "publish"     // the state frame (pulse, card, KeyPackages, mode), and a second with replacement KeyPackages
	PhaseRecover     = "recover"     // settling the outbox a crash left
	PhaseDrain       = "drain"       // pull, validate, commit, ack, notify
	PhaseUpdate      = "update"      // checking the relay's update repository (Config.Relay.Updates)
	PhaseLive        = "live"        // staying linked to the window's end
	PhaseAnnounce    = "announce"    // signing the card and publishing the next wake
	PhaseManagement  = "management"  // ending the management channel (MQTT) before sleeping
	PhaseClose       = "close"       // closing the device link
)

// No phase measures arming the wake source: a source arms inside its Wait
// (wake.Source), which then sleeps, after the wake was recorded. Reports
// kept by earlier versions name the link's close "arm".

// Phase is one measured phase of a wake. Phases that run in parallel
// overlap; Start is the offset from the wake's start.
type Phase struct {
	Name     string        `cbor:"1,keyasint" json:"name"`
	Start    time.Duration `cbor:"2,keyasint" json:"start"`
	Duration time.Duration `cbor:"3,keyasint" json:"duration"`
	Err      string        `cbor:"4,keyasint,omitempty" json:"error,omitempty"`
}

// WakeReport is what one wake did, logged once and kept in bbolt.
type WakeReport struct {
	At       time.Time     `cbor:"1,keyasint" json:"at"`
	Reason   string        `cbor:"2,keyasint" json:"reason"` // boot, timer, rtc, gpio, unknown, mode
	Mode     string        `cbor:"3,keyasint" json:"mode"`
	End      time.Time     `cbor:"4,keyasint,omitempty" json:"windowEnd,omitempty"`
	NextWake time.Time     `cbor:"5,keyasint,omitempty" json:"nextWake,omitempty"`
	Phases   []Phase       `cbor:"6,keyasint" json:"phases"`
	Awake    time.Duration `cbor:"7,keyasint" json:"awake"`
	// Slept is the sleep that ended with this wake, on every clock
	// (CLOCK_BOOTTIME counts time suspended).
	Slept sleeptime.Span `cbor:"8,keyasint" json:"slept"`
	// LinkAttempts counts dials; LinkErr is the last dial error when the
	// relay could not be reached.
	LinkAttempts int            `cbor:"9,keyasint" json:"linkAttempts"`
	LinkErr      string         `cbor:"10,keyasint,omitempty" json:"linkError,omitempty"`
	Drain        drain.Report   `cbor:"11,keyasint" json:"drain"`
	Recovery     drain.Recovery `cbor:"12,keyasint" json:"recovery"`
	Live         int            `cbor:"13,keyasint,omitempty" json:"live,omitempty"`
	// WakeDetail says how the wake source knew what woke the agent, e.g.
	// "pm_wakeup_irq=16 (rtc-pl031)" (wake.Wake.Detail): an operator
	// checking a board's wake wiring reads it on the "wake" log line.
	WakeDetail string `cbor:"14,keyasint,omitempty" json:"wakeDetail,omitempty"`
	// Time is how the wake established the time it judged expiry by;
	// nil without Config.TrustedTime or a link.
	Time *TimeReport `cbor:"15,keyasint,omitempty" json:"time,omitempty"`
	// LinkSent and LinkReceived are the bytes the wake's links sent and
	// received on their sockets (link.Traffic), every redial included: on
	// a metered radio, what the wake cost.
	LinkSent     int64 `cbor:"16,keyasint,omitempty" json:"linkSent,omitempty"`
	LinkReceived int64 `cbor:"17,keyasint,omitempty" json:"linkReceived,omitempty"`
}

// Phase returns the total duration of the phases named name.
func (r *WakeReport) Phase(name string) time.Duration {
	var d time.Duration
	for _, p := range r.Phases {
		if p.Name == name {
			d += p.Duration
		}
	}
	return d
}

// phases measures phases on the wake's clock; safe for concurrent use,
// since independent phases run in parallel.
type phases struct {
	clock   clock.Clock
	start   time.Time
	onPhase func(Phase)

	mu sync.Mutex
	// mu guards list.
	list []Phase
}

// measure runs fn as phase name and records its duration and error.
func (p *phases) measure(name string, fn func() error) error {
	t := p.clock.Now()
	err := fn()
	ph := Phase{Name: name, Start: t.Sub(p.start), Duration: p.clock.Now().Sub(t)}
	if err != nil {
		ph.Err = err.Error()
	}
	p.mu.Lock()
	p.list = append(p.list, ph)
	p.mu.Unlock()
	if p.onPhase != nil {
		p.onPhase(ph)
	}
	return err
}

func (p *phases) done() []Phase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Phase(nil), p.list...)
}

// log writes the wake's one log line.
func (r *WakeReport) log(l *slog.Logger) {
	attrs := []any{"reason", r.Reason}
	if r.WakeDetail != "" {
		attrs = append(attrs, "wakeDetail", r.WakeDetail)
	}
	attrs = append(attrs, "mode", r.Mode, "awake", r.Awake, "linkAttempts", r.LinkAttempts, "drain", r.Drain.String(),
		slog.Group("phase", r.phaseTotals()...))
	if !r.NextWake.IsZero() {
		attrs = append(attrs, "nextWake", r.NextWake.UTC().Format(time.RFC3339))
	}
	if r.Slept.Boot > 0 {
		attrs = append(attrs, "slept", r.Slept.Boot, "suspended", r.Slept.Suspended())
	}
	if r.LinkSent+r.LinkReceived > 0 {
		attrs = append(attrs, "linkSent", r.LinkSent, "linkReceived", r.LinkReceived)
	}
	if r.LinkErr != "" {
		attrs = append(attrs, "linkError", r.LinkErr)
	}
	attrs = append(attrs, r.Time.attrs()...)
	rec := r.Recovery
	if rec.Lost+rec.Indeterminate+rec.Expired+rec.Redelivered+rec.Failed > 0 {
		attrs = append(attrs, "notifyLost", rec.Lost, "actionsIndeterminate", rec.Indeterminate,
			"redelivered", rec.Redelivered, "redeliveryFailed", rec.Failed, "expired", rec.Expired)
	}
	l.Info("wake", attrs...)
}

// Messages of logDiagnostics' lines.
const (
	msgRejected     = "record rejected or deferred"
	msgLiveRejected = "live request rejected"
	msgHandOff      = "hand-off failed"
)

// phaseTotals is one attribute per phase name, in the order the phases
// first ran, with the time of all its runs (a wake drains again when the
// relay queues more), so that no key repeats on the wake line.
func (r *WakeReport) phaseTotals() []any {
	var names []string
	total := map[string]time.Duration{}
	for _, p := range r.Phases {
		if _, ok := total[p.Name]; !ok {
			names = append(names, p.Name)
		}
		total[p.Name] += p.Duration
	}
	attrs := make([]any, 0, 2*len(names))
	for _, n := range names {
		attrs = append(attrs, n, total[n])
	}
	return attrs
}

// logDiagnostics logs each rejection or deferral of a batch, as msg, when
// the batch is done; a consequential action the gate held for the owner is
// not one (its record was accepted), and has a line of its own naming the
// ledger key the owner confirms, as has one the gate let run unsupervised
// ("action ran", with what allowed it); an accepted object whose hand-off failed
// is a warning of its own ("hand-off failed"). attrs are added to each
// line.
func logDiagnostics(l *slog.Logger, ds []drain.Diagnostic, msg string, attrs ...any) {
	for _, d := range ds {
		if reason, ok := strings.CutPrefix(d.Cause, "held:"); ok {
			l.Info("action held", append([]any{"seq", d.Seq, "reason", reason, "key", d.Detail}, attrs...)...)
			continue
		}
		if reason, ok := strings.CutPrefix(d.Cause, "ran:"); ok { // "policy" or "envelope": what let it run unsupervised
			l.Info("action ran", append([]any{"seq", d.Seq, "reason", reason, "key", d.Detail}, attrs...)...)
			continue
		}
		m := msg
		if d.Cause == drain.CauseHandOff {
			m = msgHandOff // the record was accepted; its object did not reach the application
		}
		l.Warn(m, append([]any{"seq", d.Seq, "cause", d.Cause, "detail", d.Detail}, attrs...)...)
	}
}
