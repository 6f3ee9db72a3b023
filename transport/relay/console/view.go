package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/wake"
)

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
	// Admitted reports whether agent is off probation; nil means every
	// agent is.
	Admitted func(ctx context.Context, agent string) bool
}

// Build returns the view of every device at now.
func (s *Source) Build(ctx context.Context, now time.Time) (operatorapi.Fleet, error) {
	ids, err := s.States.Agents(ctx)
	if err != nil {
		return operatorapi.Fleet{}, err
	}
	f := operatorapi.Fleet{Now: now.UTC(), Grace: operatorapi.Seconds(s.Grace / time.Second), Devices: make([]operatorapi.Device, 0, len(ids))}
	names := map[string]string{} // successor DID -> its retired predecessor's name
	for _, id := range ids {
		d, err := s.device(ctx, id, now)
		var r retiredError
		switch {
		case errors.As(err, &r):
			names[r.successor] = r.name
			continue
		case errors.Is(err, agents.ErrUnknownAgent):
			continue
		case err != nil:
			return operatorapi.Fleet{}, err
		}
		f.Devices = append(f.Devices, d)
	}
	inheritNames(f.Devices, names)
	flagDuplicates(f.Devices)
	slices.SortFunc(f.Devices, func(a, b operatorapi.Device) int {
		return cmp.Or(cmp.Compare(slices.Index(operatorapi.States, a.State), slices.Index(operatorapi.States, b.State)), cmp.Compare(a.Name, b.Name), cmp.Compare(a.DID, b.DID))
	})
	f.Summary = summarize(f.Devices)
	return f, nil
}

// One returns the view of one device with its Detail, or
// agents.ErrUnknownAgent.
func (s *Source) One(ctx context.Context, id string, now time.Time) (operatorapi.Device, error) {
	f, err := s.Build(ctx, now) // for the duplicate names
	if err != nil {
		return operatorapi.Device{}, err
	}
	for _, d := range f.Devices {
		if d.DID == id {
			d.Detail, err = s.detail(ctx, id, now)
			return d, err
		}
	}
	return operatorapi.Device{}, agents.ErrUnknownAgent
}

// retiredError is device's answer for an agent whose key was rotated
// away (agents.State.Successor): the fleet shows its successor, not it.
type retiredError struct{ name, successor string }

func (e retiredError) Error() string { return "retired: its successor is " + e.successor }

func (e retiredError) Is(target error) bool { return target == agents.ErrUnknownAgent }

// inheritNames gives a successor that has published no card yet its
// retired predecessor's name.
func inheritNames(ds []operatorapi.Device, names map[string]string) {
	for i, d := range ds {
		if n, ok := names[d.DID]; ok && d.Name == cardName(nil) {
			ds[i].Name = n
		}
	}
}

func flagDuplicates(ds []operatorapi.Device) {
	n := map[string]int{}
	for _, d := range ds {
		n[d.Name]++
	}
	for i := range ds {
		ds[i].DuplicateName = n[ds[i].Name] > 1
	}
}

func summarize(ds []operatorapi.Device) operatorapi.Summary {
	s := operatorapi.Summary{Devices: len(ds)}
	for _, d := range ds {
		switch d.State {
		case operatorapi.StateAwake:
			s.Awake++
		case operatorapi.StateAsleep:
			s.Asleep++
		case operatorapi.StateOffline:
			s.Offline++
		case operatorapi.StateOverdue:
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
		if d.AwaitingAdmission {
			s.AwaitingAdmission++
		}
	}
	return s
}

// device builds id's row.
func (s *Source) device(ctx context.Context, id string, now time.Time) (operatorapi.Device, error) {
	st, err := s.States.Get(ctx, id)
	if err != nil {
		return operatorapi.Device{}, err
	}
	if st.Successor != "" {
		return operatorapi.Device{}, retiredError{cardName(st.Card), st.Successor}
	}
	d := operatorapi.Device{DID: id, Name: cardName(st.Card), Mode: string(st.Mode), UpdatedAt: st.UpdatedAt.UTC(), Linked: s.Up(ctx, id),
		AwaitingAdmission: s.Admitted != nil && !s.Admitted(ctx, id)}
	agent, err := did.Parse(id)
	if err != nil {
		return operatorapi.Device{}, err
	}
	s.fromStatus(&d, st, agent)
	d.Pulse = pulseOf(st.Pulse, agent, now)
	if d.Pulse != nil && d.Pulse.Verified {
		if p, _ := pulse.Parse(st.Pulse); p.Halted {
			d.Halted = true
		}
	}
	if err := s.queueOf(ctx, &d, st, now); err != nil {
		return operatorapi.Device{}, err
	}
	pool, lr, err := s.States.KeyPackages(ctx, id)
	if err != nil {
		return operatorapi.Device{}, err
	}
	d.KeyPackages = operatorapi.KeyPackages{Left: len(pool), LastResort: lr != nil, LastResortInUse: len(pool) == 0 && lr != nil}
	d.NextWindow, d.Expected = schedule(st, d.Pulse, now)
	d.State = s.state(d, now)
	return d, nil
}

// state decides the device's state: overdue when the wake or pulse its
// schedule promised is more than the grace late and it is not linked;
// then halted, awake (linked), asleep (a sleeping mode with a wake
// promised) or offline (not linked although its mode never sleeps, or
// asleep with no wake promised: it waits for an event).
func (s *Source) state(d operatorapi.Device, now time.Time) string {
	switch {
	case !d.Linked && d.Expected != nil && now.After(d.Expected.Add(s.Grace)):
		return operatorapi.StateOverdue
	case d.Halted:
		return operatorapi.StateHalted
	case d.Linked:
		return operatorapi.StateAwake
	case d.Expected != nil && (d.Mode == string(wake.HourlyWake) || d.Mode == string(wake.Sleep)):
		return operatorapi.StateAsleep
	}
	return operatorapi.StateOffline
}

// schedule returns the next wake window and the next wake or pulse the
// device's published schedule promises: in hourly_wake and sleep mode the
// next wake it announced (hourly_wake: else its window after its last
// state), in always_on and session mode a pulse PulseInterval after the
// last.
func schedule(st agents.State, p *operatorapi.Pulse, now time.Time) (*operatorapi.Window, *time.Time) {
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
		w := &operatorapi.Window{Start: next, Length: operatorapi.Seconds(windowLength(st.Window) / time.Second), In: operatorapi.Seconds(next.Sub(now) / time.Second)}
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
func pulseOf(doc []byte, agent did.DID, now time.Time) *operatorapi.Pulse {
	if doc == nil {
		return nil
	}
	p, err := pulse.Parse(doc)
	if err == nil && p.Agent != agent {
		err = errors.New("signed by another DID")
	}
	if err != nil {
		return &operatorapi.Pulse{Error: err.Error()}
	}
	return &operatorapi.Pulse{Seq: p.Seq, At: p.At.UTC(), Age: operatorapi.Seconds(now.Sub(p.At) / time.Second), Verified: true}
}

// fromStatus fills what the device's signed status says.
func (s *Source) fromStatus(d *operatorapi.Device, st agents.State, agent did.DID) {
	if st.Status == nil {
		return
	}
	ws, err := parseStatus(st.Status, agent)
	if err != nil {
		d.StatusError = err.Error()
		return
	}
	d.Board, d.Version, d.Halted, d.HeldCount, d.LostCount = ws.Board, ws.Version, ws.Halted, ws.HeldCount, ws.LostCount
	d.Health = ws.Health
	if ws.Wake != nil {
		d.LastWake = &operatorapi.Wake{At: ws.Wake.At, Reason: ws.Wake.Reason}
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
