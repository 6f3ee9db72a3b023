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
	// Verified remembers the verdicts on signed statuses and pulses; nil
	// means verifying each at every read (New gives the console one).
	Verified *Verified
	// Visible, when set, says whether the request of ctx (OperatorOf)
	// may see agent: the devices it hides are in no row, summary or
	// detail (a hosted relay's tenants, docs/tenants.md).
	Visible func(ctx context.Context, agent string) bool
	// TenantDevices, when set, lists the devices of the tenant whose
	// owner DID is owner, for Query.Tenant; without it that query
	// matches no device.
	TenantDevices func(ctx context.Context, owner string) ([]string, error)
}

// Build returns the view of every device at now.
func (s *Source) Build(ctx context.Context, now time.Time) (operatorapi.Fleet, error) {
	return s.Query(ctx, now, operatorapi.Query{})
}

// Query returns the view at now of the devices q selects, page q.Page of
// them (all of them when q.Per is zero), with the summary of the whole
// fleet. Every device's state is computed, which the summary and the
// filter need; only the page's rows read their KeyPackage pool and their
// queue's oldest record.
func (s *Source) Query(ctx context.Context, now time.Time, q operatorapi.Query) (operatorapi.Fleet, error) {
	all, err := s.states(ctx, now, s.Visible)
	if err != nil {
		return operatorapi.Fleet{}, err
	}
	in, err := s.tenantOf(ctx, q.Tenant)
	if err != nil {
		return operatorapi.Fleet{}, err
	}
	f := operatorapi.Fleet{Now: now.UTC(), Grace: operatorapi.Seconds(s.Grace / time.Second), Summary: summarize(all), Devices: []operatorapi.Device{}}
	var match []*operatorapi.Device // sorted as pointers: a Device is large
	for i := range all {
		if q.Match(all[i]) && (in == nil || in[all[i].DID]) {
			match = append(match, &all[i])
		}
	}
	sortDevices(match, q.Sort)
	f.Total, f.Page, f.Per, f.Pages = len(match), max(q.Page, 1), q.Per, 1
	if f.Per == 0 {
		f.Per = f.Total
	}
	if f.Per > 0 {
		f.Pages = max((f.Total+f.Per-1)/f.Per, 1)
		lo := min((f.Page-1)*f.Per, f.Total)
		match = match[lo:min(lo+f.Per, f.Total)]
	}
	for _, d := range match {
		f.Devices = append(f.Devices, *d)
	}
	for i := range f.Devices {
		if err := s.complete(ctx, &f.Devices[i], now); err != nil {
			return operatorapi.Fleet{}, err
		}
	}
	return f, nil
}

// tenantOf is the set of owner's devices for Query.Tenant: nil when
// owner is empty (no condition), empty without TenantDevices.
func (s *Source) tenantOf(ctx context.Context, owner string) (map[string]bool, error) {
	if owner == "" {
		return nil, nil
	}
	in := map[string]bool{}
	if s.TenantDevices == nil {
		return in, nil
	}
	devs, err := s.TenantDevices(ctx, owner)
	for _, d := range devs {
		in[d] = true
	}
	return in, err
}

// Tally returns, for each group that group names, the summary of its
// devices at now (as the fleet's summary counts them); a device whose
// group is "" is counted under "". It reads every device, whatever
// Visible says: its answer is counts, never a device, and the caller
// decides who sees them (the host's page of tenants, docs/tenants.md).
func (s *Source) Tally(ctx context.Context, now time.Time, group func(agent string) string) (map[string]operatorapi.Summary, error) {
	all, err := s.states(ctx, now, nil)
	if err != nil {
		return nil, err
	}
	by := map[string][]operatorapi.Device{}
	for _, d := range all {
		g := group(d.DID)
		by[g] = append(by[g], d)
	}
	out := make(map[string]operatorapi.Summary, len(by))
	for g, ds := range by {
		out[g] = summarize(ds)
	}
	return out, nil
}

// states returns every device visible says the request of ctx may see
// (nil: every device) with its state, unsorted and without what only a
// row shows (complete).
func (s *Source) states(ctx context.Context, now time.Time, visible func(ctx context.Context, agent string) bool) ([]operatorapi.Device, error) {
	ids, err := s.States.Agents(ctx)
	if err != nil {
		return nil, err
	}
	ds := make([]operatorapi.Device, 0, len(ids))
	names := map[string]string{} // successor DID -> its retired predecessor's name
	for _, id := range ids {
		if visible != nil && !visible(ctx, id) {
			continue
		}
		d, err := s.device(ctx, id, now)
		var r retiredError
		switch {
		case errors.As(err, &r):
			names[r.successor] = r.name
			continue
		case errors.Is(err, agents.ErrUnknownAgent):
			continue
		case err != nil:
			return nil, err
		}
		ds = append(ds, d)
	}
	inheritNames(ds, names)
	flagDuplicates(ds)
	return ds, nil
}

// sortDevices sorts the table most urgent state first, or by name when
// by is operatorapi.SortName; then by name and DID.
func sortDevices(ds []*operatorapi.Device, by string) {
	slices.SortFunc(ds, func(a, b *operatorapi.Device) int {
		st := cmp.Compare(slices.Index(operatorapi.States, a.State), slices.Index(operatorapi.States, b.State))
		if by == operatorapi.SortName {
			return cmp.Or(cmp.Compare(a.Name, b.Name), st, cmp.Compare(a.DID, b.DID))
		}
		return cmp.Or(st, cmp.Compare(a.Name, b.Name), cmp.Compare(a.DID, b.DID))
	})
}

// One returns the view of one device with its Detail, or
// agents.ErrUnknownAgent.
func (s *Source) One(ctx context.Context, id string, now time.Time) (operatorapi.Device, error) {
	f, err := s.Query(ctx, now, operatorapi.Query{Q: id}) // the whole fleet's duplicate names
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

// device computes id's state and what the filter matches: its status,
// pulse, link, queue counts and schedule. complete adds the rest of its
// row.
func (s *Source) device(ctx context.Context, id string, now time.Time) (operatorapi.Device, error) {
	st, err := s.States.Get(ctx, id)
	if err != nil {
		return operatorapi.Device{}, err
	}
	name, tags := s.Verified.Card(st.Card, id)
	if st.Successor != "" {
		return operatorapi.Device{}, retiredError{name, st.Successor}
	}
	d := operatorapi.Device{DID: id, Name: name, Tags: tags, Mode: string(st.Mode), UpdatedAt: st.UpdatedAt.UTC(), Linked: s.Up(ctx, id),
		AwaitingAdmission: s.Admitted != nil && !s.Admitted(ctx, id)}
	s.fromStatus(&d, st)
	var halted bool
	d.Pulse, halted = s.pulseOf(st.Pulse, id, now)
	d.Halted = d.Halted || halted
	if err := s.queueOf(ctx, &d, st, now); err != nil {
		return operatorapi.Device{}, err
	}
	d.NextWindow, d.Expected = schedule(st, d.Pulse, now)
	d.State = s.state(d, now)
	return d, nil
}

// complete adds to d what only its row shows: its KeyPackage pool and its
// queue's oldest record.
func (s *Source) complete(ctx context.Context, d *operatorapi.Device, now time.Time) error {
	pool, lr, err := s.States.KeyPackages(ctx, d.DID)
	if err != nil {
		return err
	}
	d.KeyPackages = operatorapi.KeyPackages{Left: len(pool), LastResort: lr != nil, LastResortInUse: len(pool) == 0 && lr != nil}
	if d.Queue.Messages == 0 {
		return nil
	}
	first, err := s.Queue.Next(ctx, d.DID, 0, 1, now)
	if err == nil && len(first) > 0 {
		d.Queue.OldestAge = operatorapi.Seconds(now.Sub(first[0].EnqueuedAt) / time.Second)
	}
	return err
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
	name, _ := cardInfo(card)
	return name
}

// cardInfo is the name an Agent Card gives, or "(no card)", and the tags
// of its skills, each once, sorted.
func cardInfo(card []byte) (string, []string) {
	c, err := a2a.ParseCard(card)
	if err != nil {
		return "(no card)", nil
	}
	var tags []string
	for _, sk := range c.Skills {
		tags = append(tags, sk.Tags...)
	}
	slices.Sort(tags)
	if c.Name == "" {
		return "(no card)", slices.Compact(tags)
	}
	return c.Name, slices.Compact(tags)
}

// pulseOf parses and verifies the pulse the relay keeps, and reports
// whether a verified pulse says the device is halted.
func (s *Source) pulseOf(doc []byte, agent string, now time.Time) (*operatorapi.Pulse, bool) {
	if doc == nil {
		return nil, false
	}
	p, err := s.Verified.Pulse(doc, agent)
	if err != nil {
		return &operatorapi.Pulse{Error: err.Error()}, false
	}
	return &operatorapi.Pulse{Seq: p.Seq, At: p.At.UTC(), Age: operatorapi.Seconds(now.Sub(p.At) / time.Second), Verified: true}, p.Halted
}

// fromStatus fills what the device's signed status says.
func (s *Source) fromStatus(d *operatorapi.Device, st agents.State) {
	if st.Status == nil {
		return
	}
	ws, err := s.Verified.Status(st.Status, d.DID)
	if err != nil {
		d.StatusError = err.Error()
		return
	}
	d.Board, d.Version, d.Halted, d.HeldCount, d.LostCount = ws.Board, ws.Version, ws.Halted, ws.HeldCount, ws.LostCount
	d.Health, d.Update, d.Install = ws.Health, ws.Update, ws.Install
	d.OSUpdate, d.OSInstall = ws.OSUpdate, ws.OSInstall
	if ws.Wake != nil {
		d.LastWake = &operatorapi.Wake{At: ws.Wake.At, Reason: ws.Wake.Reason}
	}
	if ws.LastWake != nil {
		d.LastAwakeMs = ws.LastWake.AwakeMs
	}
}

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
