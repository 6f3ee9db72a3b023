package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"slices"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// States of a device, most urgent first (the order of the table).
const (
	StateOverdue = "overdue" // a wake or pulse its schedule promised did not come
	StateHalted  = "halted"  // the owner's halt is in force
	StateAwake   = "awake"   // linked to a relay now
	StateAsleep  = "asleep"  // not linked, as its schedule says
	StateOffline = "offline" // not linked, and its schedule promises nothing to wait for
)

// States lists the states in table order.
var States = []string{StateOverdue, StateHalted, StateAwake, StateAsleep, StateOffline}

// PulseInterval is how often a device that never sleeps (always_on,
// session) pulses: runtime.PulseInterval (runtime/wake.go), which this
// package may not import.
const PulseInterval = time.Hour

// FullShare is the share of its bounds above which a queue counts as
// nearly full in the summary.
const FullShare = 0.8

// Source is what the view reads: the relay's stores and its links.
type Source struct {
	States agents.Store
	Queue  queue.Store
	// Up reports whether agent's device is linked (to this relay or, in a
	// fleet of relays, another).
	Up func(ctx context.Context, agent string) bool
	// Bounds returns the queue bounds in force for agent with state st.
	Bounds func(agent string, st agents.State) queuebounds.Bounds
	// Grace is how late a promised wake or pulse may be before its device
	// is overdue.
	Grace time.Duration
}

// Fleet is the console's view of every device at Now.
type Fleet struct {
	Now     time.Time `json:"now"`
	Grace   Seconds   `json:"overdueGraceSeconds"`
	Summary Summary   `json:"summary"`
	Devices []Device  `json:"devices"`
}

// Summary is the line above the table.
type Summary struct {
	Devices     int `json:"devices"`
	Awake       int `json:"awake"`
	Asleep      int `json:"asleep"`
	Offline     int `json:"offline"`
	Overdue     int `json:"overdue"`
	Halted      int `json:"halted"`
	WithHeld    int `json:"withHeldActions"`
	QueuesAbove int `json:"queuesAbove80"`
}

// Seconds is a duration as whole seconds in JSON.
type Seconds int64

// Device is one row of the table, and with Detail its page.
type Device struct {
	Name          string      `json:"name"`
	DuplicateName bool        `json:"duplicateName,omitempty"`
	DID           string      `json:"did"`
	Board         string      `json:"board,omitempty"`
	Version       string      `json:"version,omitempty"`
	Mode          string      `json:"mode"`
	State         string      `json:"state"`
	Linked        bool        `json:"linked"`
	Halted        bool        `json:"halted"`
	NextWindow    *Window     `json:"nextWindow,omitempty"`
	Expected      *time.Time  `json:"expected,omitempty"`    // the wake or pulse its schedule promises next
	LastWake      *Wake       `json:"lastWake,omitempty"`    // the latest wake it started
	LastAwakeMs   int64       `json:"lastAwakeMs,omitempty"` // how long its last completed wake was awake
	Pulse         *Pulse      `json:"pulse,omitempty"`
	Queue         Queue       `json:"queue"`
	KeyPackages   KeyPackages `json:"keyPackages"`
	HeldCount     int         `json:"heldActions"`
	UpdatedAt     time.Time   `json:"updatedAt"` // its last published state
	StatusError   string      `json:"statusError,omitempty"`
	Detail        *Detail     `json:"detail,omitempty"`
}

// Window is the next wake window.
type Window struct {
	Start  time.Time `json:"start"`
	Length Seconds   `json:"lengthSeconds"`
	In     Seconds   `json:"inSeconds"` // from Now; negative once it opened
}

// Wake is a wake the device reported in its signed status.
type Wake struct {
	At      time.Time          `json:"at"`
	Reason  string             `json:"reason"`
	AwakeMs int64              `json:"awakeMs,omitempty"`
	Phases  []wire.StatusPhase `json:"phases,omitempty"`
}

// Pulse is the device's latest liveness pulse.
type Pulse struct {
	Seq      uint64    `json:"seq"`
	At       time.Time `json:"at"`
	Age      Seconds   `json:"ageSeconds"`
	Verified bool      `json:"verified"`
	Error    string    `json:"error,omitempty"`
}

// Queue is the device's queue at the relay.
type Queue struct {
	Messages    int     `json:"messages"`
	Bytes       int64   `json:"bytes"`
	MaxMessages int     `json:"maxMessages"`
	MaxBytes    int64   `json:"maxBytes"`
	OldestAge   Seconds `json:"oldestAgeSeconds"`
	// Share is the fuller of messages/MaxMessages and bytes/MaxBytes.
	Share float64 `json:"share"`
}

// KeyPackages is the device's KeyPackage pool at the relay.
type KeyPackages struct {
	Left       int  `json:"left"`
	LastResort bool `json:"lastResort"` // the relay holds a last-resort KeyPackage
	// LastResortInUse: the pool is empty, so every session initiator gets
	// the last-resort KeyPackage (RFC 9420, Section 16.8).
	LastResortInUse bool `json:"lastResortInUse"`
}

// Detail is what only the device page shows.
type Detail struct {
	Wakes    []Wake            `json:"wakes"` // this wake and the one before, newest first
	Senders  []Sender          `json:"senders"`
	Held     []wire.StatusHeld `json:"held"`
	Window   string            `json:"window"`
	Schedule string            `json:"schedule"`
}

// Sender is the share of one sender DID in a device's queue.
type Sender struct {
	DID       string  `json:"did"`
	Messages  int     `json:"messages"`
	Bytes     int64   `json:"bytes"`
	OldestAge Seconds `json:"oldestAgeSeconds"`
}

// Build returns the view of every device at now.
func (s *Source) Build(ctx context.Context, now time.Time) (Fleet, error) {
	ids, err := s.States.Agents(ctx)
	if err != nil {
		return Fleet{}, err
	}
	f := Fleet{Now: now.UTC(), Grace: Seconds(s.Grace / time.Second), Devices: make([]Device, 0, len(ids))}
	for _, id := range ids {
		d, err := s.device(ctx, id, now)
		if errors.Is(err, agents.ErrUnknownAgent) {
			continue
		}
		if err != nil {
			return Fleet{}, err
		}
		f.Devices = append(f.Devices, d)
	}
	flagDuplicates(f.Devices)
	slices.SortFunc(f.Devices, func(a, b Device) int {
		return cmp.Or(cmp.Compare(slices.Index(States, a.State), slices.Index(States, b.State)), cmp.Compare(a.Name, b.Name), cmp.Compare(a.DID, b.DID))
	})
	f.Summary = summarize(f.Devices)
	return f, nil
}

// One returns the view of one device with its Detail, or
// agents.ErrUnknownAgent.
func (s *Source) One(ctx context.Context, id string, now time.Time) (Device, error) {
	f, err := s.Build(ctx, now) // for the duplicate names
	if err != nil {
		return Device{}, err
	}
	for _, d := range f.Devices {
		if d.DID == id {
			d.Detail, err = s.detail(ctx, id, now)
			return d, err
		}
	}
	return Device{}, agents.ErrUnknownAgent
}

// Filter keeps the devices in state (all when state is empty).
func (f Fleet) Filter(state string) Fleet {
	if state == "" {
		return f
	}
	out := f
	out.Devices = nil
	for _, d := range f.Devices {
		if d.State == state {
			out.Devices = append(out.Devices, d)
		}
	}
	return out
}

func flagDuplicates(ds []Device) {
	n := map[string]int{}
	for _, d := range ds {
		n[d.Name]++
	}
	for i := range ds {
		ds[i].DuplicateName = n[ds[i].Name] > 1
	}
}

func summarize(ds []Device) Summary {
	s := Summary{Devices: len(ds)}
	for _, d := range ds {
		switch d.State {
		case StateAwake:
			s.Awake++
		case StateAsleep:
			s.Asleep++
		case StateOffline:
			s.Offline++
		case StateOverdue:
			s.Overdue++
		}
		if d.Halted {
			s.Halted++
		}
		if d.HeldCount > 0 {
			s.WithHeld++
		}
		if d.Queue.Share > FullShare {
			s.QueuesAbove++
		}
	}
	return s
}

// device builds id's row.
func (s *Source) device(ctx context.Context, id string, now time.Time) (Device, error) {
	st, err := s.States.Get(ctx, id)
	if err != nil {
		return Device{}, err
	}
	d := Device{DID: id, Name: cardName(st.Card), Mode: string(st.Mode), UpdatedAt: st.UpdatedAt.UTC(), Linked: s.Up(ctx, id)}
	agent, err := did.Parse(id)
	if err != nil {
		return Device{}, err
	}
	s.fromStatus(&d, st, agent)
	d.Pulse = pulseOf(st.Pulse, agent, now)
	if d.Pulse != nil && d.Pulse.Verified {
		if p, _ := pulse.Parse(st.Pulse); p.Halted {
			d.Halted = true
		}
	}
	if err := s.queueOf(ctx, &d, st, now); err != nil {
		return Device{}, err
	}
	pool, lr, err := s.States.KeyPackages(ctx, id)
	if err != nil {
		return Device{}, err
	}
	d.KeyPackages = KeyPackages{Left: len(pool), LastResort: lr != nil, LastResortInUse: len(pool) == 0 && lr != nil}
	d.NextWindow, d.Expected = schedule(st, d.Pulse, now)
	d.State = s.state(d, now)
	return d, nil
}

// state decides the device's state: overdue when the wake or pulse its
// schedule promised is more than the grace late and it is not linked;
// then halted, awake (linked), asleep (a sleeping mode with a wake
// promised) or offline (not linked although its mode never sleeps, or
// asleep with no wake promised: it waits for an event).
func (s *Source) state(d Device, now time.Time) string {
	switch {
	case !d.Linked && d.Expected != nil && now.After(d.Expected.Add(s.Grace)):
		return StateOverdue
	case d.Halted:
		return StateHalted
	case d.Linked:
		return StateAwake
	case d.Expected != nil && (d.Mode == string(wake.HourlyWake) || d.Mode == string(wake.Sleep)):
		return StateAsleep
	}
	return StateOffline
}

// schedule returns the next wake window and the next wake or pulse the
// device's published schedule promises: in hourly_wake and sleep mode the
// next wake it announced (hourly_wake: else its window after its last
// state), in always_on and session mode a pulse PulseInterval after the
// last.
func schedule(st agents.State, p *Pulse, now time.Time) (*Window, *time.Time) {
	switch st.Mode {
	case wake.HourlyWake, wake.Sleep:
		next := st.NextWake
		if next.IsZero() && st.Mode == wake.HourlyWake {
			next, _ = st.Window.Next(st.UpdatedAt)
		}
		if next.IsZero() {
			return nil, nil
		}
		next = next.UTC()
		w := &Window{Start: next, Length: Seconds(windowLength(st.Window) / time.Second), In: Seconds(next.Sub(now) / time.Second)}
		return w, &next
	case wake.AlwaysOn, wake.Session:
		last := st.UpdatedAt
		if p != nil && p.Verified && p.At.After(last) {
			last = p.At
		}
		next := last.Add(PulseInterval).UTC()
		return nil, &next
	}
	return nil, nil
}

// CardName is the name an Agent Card gives, or "(no card)".
func CardName(card []byte) string { return cardName(card) }

func cardName(card []byte) string {
	c, err := a2a.ParseCard(card)
	if err != nil || c.Name == "" {
		return "(no card)"
	}
	return c.Name
}

// pulseOf parses and verifies the pulse the relay keeps.
func pulseOf(doc []byte, agent did.DID, now time.Time) *Pulse {
	if doc == nil {
		return nil
	}
	p, err := pulse.Parse(doc)
	if err == nil && p.Agent != agent {
		err = errors.New("signed by another DID")
	}
	if err != nil {
		return &Pulse{Error: err.Error()}
	}
	return &Pulse{Seq: p.Seq, At: p.At.UTC(), Age: Seconds(now.Sub(p.At) / time.Second), Verified: true}
}

// fromStatus fills what the device's signed status says.
func (s *Source) fromStatus(d *Device, st agents.State, agent did.DID) {
	if st.Status == nil {
		return
	}
	ws, err := parseStatus(st.Status, agent)
	if err != nil {
		d.StatusError = err.Error()
		return
	}
	d.Board, d.Version, d.Halted, d.HeldCount = ws.Board, ws.Version, ws.Halted, ws.HeldCount
	if ws.Wake != nil {
		d.LastWake = &Wake{At: ws.Wake.At, Reason: ws.Wake.Reason}
	}
	if ws.LastWake != nil {
		d.LastAwakeMs = ws.LastWake.AwakeMs
	}
}

// parseStatus verifies a signed status again (it may come from a store
// another relay wrote) and returns its payload.
func parseStatus(b []byte, agent did.DID) (wire.Status, error) { return VerifyStatus(b, agent) }

// VerifyStatus checks a device's signed status (link wire.State.Status):
// a Governed Object issued by agent and signed with its key (draft
// Section 5.4), with purpose wire.PurposeStatus and a payload
// wire.ParseStatus accepts, and returns the payload.
func VerifyStatus(b []byte, agent did.DID) (wire.Status, error) {
	o, err := governed.Parse(b)
	if err != nil {
		return wire.Status{}, fmt.Errorf("status: %v", err)
	}
	if o.Issuer != agent {
		return wire.Status{}, fmt.Errorf("status issued by %s, not by the agent", o.Issuer)
	}
	if err := o.VerifySignature(); err != nil {
		return wire.Status{}, fmt.Errorf("status: %v", err)
	}
	if o.Governance.Purpose != wire.PurposeStatus {
		return wire.Status{}, fmt.Errorf("status has purpose %q, want %q", o.Governance.Purpose, wire.PurposeStatus)
	}
	return wire.ParseStatus(o.Payload)
}

// windowLength is w's length (wake.DefaultLength when zero).
func windowLength(w wake.Window) time.Duration {
	if w.Length <= 0 {
		return wake.DefaultLength
	}
	return w.Length
}
