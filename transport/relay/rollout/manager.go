package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store/rollouts"
)

// Manager keeps the rollouts in Store, read, changed and written back by
// compare-and-swap, so that relays sharing the store share them.
type Manager struct {
	Store rollouts.Store
	// Clock is the relay's clock; nil means the real clock.
	Clock clock.Clock

	mu sync.Mutex // guards decoded
	// decoded is the last record of each rollout Offer decoded, by id.
	decoded map[string]decoded
}

// decoded is a rollout's record decoded at revision rev.
type decoded struct {
	rev uint64
	r   *Rollout
}

// recordVersion is the first member of a stored record; a record of
// another version is refused, never misread.
const recordVersion = 1

type record struct {
	V int `json:"v"`
	*Rollout
}

func decode(id string, b []byte) (*Rollout, error) {
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("rollout %s: damaged record: %v", id, err)
	}
	if rec.V != recordVersion || rec.Rollout == nil {
		return nil, fmt.Errorf("rollout %s: record of version %d, this relay reads %d", id, rec.V, recordVersion)
	}
	if rec.Results == nil {
		rec.Results = map[string]Result{}
	}
	return rec.Rollout, nil
}

func encode(r *Rollout) ([]byte, error) { return json.Marshal(record{V: recordVersion, Rollout: r}) }

// Start plans spec over devices and stores it under its key
// (Rollout.Key); ErrExists if its tenant (or the relay) has a rollout of
// that id.
func (m *Manager) Start(ctx context.Context, spec Spec, devices []Device) (*Rollout, error) {
	r, err := Plan(spec, devices, clock.Or(m.Clock).Now())
	if err != nil {
		return nil, err
	}
	b, err := encode(r)
	if err != nil {
		return nil, err
	}
	_, err = m.Store.Put(ctx, r.Key(), b, 0)
	if errors.Is(err, rollouts.ErrConflict) {
		return nil, fmt.Errorf("%w: %s", ErrExists, r.ID)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Get returns the rollout stored under key id (Rollout.Key: its id for a
// rollout of the relay's own operators), stepped to now (not written).
// Pause, Resume and Abort take the same key.
func (m *Manager) Get(ctx context.Context, id string) (*Rollout, error) {
	r, _, err := m.get(ctx, id)
	if err == nil {
		r.Step(clock.Or(m.Clock).Now())
	}
	return r, err
}

func (m *Manager) get(ctx context.Context, id string) (*Rollout, uint64, error) {
	b, rev, err := m.Store.Get(ctx, id)
	if errors.Is(err, rollouts.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, 0, err
	}
	r, err := decode(id, b)
	return r, rev, err
}

// List returns every rollout, the relay's and every tenant's (Spec.Tenant
// says whose), stepped to now (not written).
func (m *Manager) List(ctx context.Context) ([]*Rollout, error) {
	ids, err := m.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Rollout
	for _, id := range ids {
		r, err := m.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// update applies change to rollout id and writes it back if change says
// it changed, retrying on a conflict with another writer. It returns the
// rollout as written (or as read, unchanged).
func (m *Manager) update(ctx context.Context, id string, change func(r *Rollout) (bool, error)) (*Rollout, error) {
	for {
		r, rev, err := m.get(ctx, id)
		if err != nil {
			return nil, err
		}
		changed, err := change(r)
		if err != nil || !changed {
			return r, err
		}
		b, err := encode(r)
		if err != nil {
			return nil, err
		}
		_, err = m.Store.Put(ctx, id, b, rev)
		if errors.Is(err, rollouts.ErrConflict) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			continue
		}
		return r, err
	}
}

// Pause pauses rollout id.
func (m *Manager) Pause(ctx context.Context, id, reason string) (*Rollout, error) {
	return m.update(ctx, id, func(r *Rollout) (bool, error) {
		now := clock.Or(m.Clock).Now()
		r.Step(now)
		return true, r.Pause(reason, now)
	})
}

// Resume resumes rollout id.
func (m *Manager) Resume(ctx context.Context, id string) (*Rollout, error) {
	return m.update(ctx, id, func(r *Rollout) (bool, error) { return true, r.Resume(clock.Or(m.Clock).Now()) })
}

// Abort aborts rollout id.
func (m *Manager) Abort(ctx context.Context, id, reason string) (*Rollout, error) {
	return m.update(ctx, id, func(r *Rollout) (bool, error) { return true, r.Abort(reason, clock.Or(m.Clock).Now()) })
}

// Offer returns the target device should install at its wake now, from
// the first rollout (by id) that offers it one; it writes the rollouts it
// stepped (a wave started, or done).
func (m *Manager) Offer(ctx context.Context, device string) (Target, bool, error) {
	_, t, ok, err := m.OfferID(ctx, device)
	return t, ok, err
}

// OfferID is Offer, with the id of the rollout that offers the target
// (its Spec.ID, without its tenant's key).
// A rollout with nothing to step is judged from the decoded record of its
// revision kept from an earlier wake (read-only), so that a wake costs a
// read of each record, not its decoding (BenchmarkOffer).
func (m *Manager) OfferID(ctx context.Context, device string) (string, Target, bool, error) {
	return m.OfferIDOf(ctx, device, nil)
}

// OfferIDOf is OfferID, taking only the rollouts whose tenant
// (Spec.Tenant) inTenant accepts: the relay offers a tenant's rollout
// only to a device still in that tenant. inTenant is asked only of a
// rollout that would offer the device a target, and its error is
// returned; nil accepts every rollout. A tenant's rollout inTenant
// refuses records the device as Left (Rollout.Leave): it was in the
// tenant when the rollout started, and has left it.
func (m *Manager) OfferIDOf(ctx context.Context, device string, inTenant func(tenant string) (bool, error)) (string, Target, bool, error) {
	ids, err := m.Store.List(ctx)
	if err != nil {
		return "", Target{}, false, err
	}
	now := clock.Or(m.Clock).Now()
	for _, id := range ids {
		r, err := m.cached(ctx, id)
		if err == nil && r.due(now) {
			r, err = m.update(ctx, id, func(r *Rollout) (bool, error) { return r.Step(now), nil })
		}
		if err != nil {
			return "", Target{}, false, err
		}
		if !r.Offer(device) {
			continue
		}
		ok := true
		if inTenant != nil {
			ok, err = inTenant(r.Tenant)
		}
		if err != nil {
			return "", Target{}, false, err
		}
		if ok {
			return r.ID, r.Target, true, nil
		}
		if _, err := m.update(ctx, id, func(r *Rollout) (bool, error) { return r.Leave(device, leftReason, now), nil }); err != nil {
			return "", Target{}, false, err
		}
	}
	return "", Target{}, false, nil
}

// leftReason is the reason of a device found out of the tenant at its wake.
const leftReason = "no longer in the tenant at a wake"

// Forget records that the relay forgot device for reason (Rollout.Leave)
// in every rollout that holds it without a report, the relay's own and
// its tenants', and returns how many changed: a device forgotten for its
// silence may never wake again, and its rollouts end without it.
func (m *Manager) Forget(ctx context.Context, device, reason string) (int, error) {
	return m.each(ctx, holding(device), func(r *Rollout, now time.Time) int { return count(r.Leave(device, reason, now)) })
}

// LeaveTenants records as Left, for reason (Rollout.Leave), each device
// without a report of every running or paused tenant's rollout
// (Spec.Tenant) that the rollout's tenant no longer holds, and returns
// how many devices it changed. members(tenant) returns the test of the
// tenant's devices now, read once per rollout; its error is returned. It
// finds a device taken out of its tenant other than by the relay's
// forgetting (Forget), which may never wake to be found out of it
// (OfferIDOf), so that the rollout can end without it.
func (m *Manager) LeaveTenants(ctx context.Context, members func(tenant string) (func(device string) bool, error), reason string) (int, error) {
	var gone []string
	holds := func(r *Rollout) (bool, error) {
		if r.Tenant == "" || r.State == Aborted || r.State == Done {
			return false, nil
		}
		in, err := members(r.Tenant)
		if err != nil {
			return false, err
		}
		gone = r.outside(in)
		return len(gone) > 0, nil
	}
	return m.each(ctx, holds, func(r *Rollout, now time.Time) int {
		n := 0
		for _, d := range gone {
			if r.Leave(d, reason, now) {
				n++
			}
		}
		return n
	})
}

// Carry gives device's place to successor, the key its agent retired it
// for (Rollout.Carry), in every rollout that holds device, and returns
// how many changed.
func (m *Manager) Carry(ctx context.Context, device, successor string) (int, error) {
	return m.each(ctx, holding(device), func(r *Rollout, now time.Time) int { return count(r.Carry(device, successor, now)) })
}

// each applies change to every rollout that holds selects, storing those
// it changes, and returns the sum of what change returns: how many
// rollouts, or devices, it changed (0 for none). holds is asked of the
// rollout as stored, change of it as read again for the update; holds's
// error is returned.
func (m *Manager) each(ctx context.Context, holds func(r *Rollout) (bool, error), change func(r *Rollout, now time.Time) int) (int, error) {
	ids, err := m.Store.List(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		r, err := m.cached(ctx, id)
		if err != nil {
			return n, err
		}
		if ok, err := holds(r); !ok || err != nil {
			if err != nil {
				return n, err
			}
			continue
		}
		changed := 0
		_, err = m.update(ctx, id, func(r *Rollout) (bool, error) {
			changed = change(r, clock.Or(m.Clock).Now())
			return changed > 0, nil
		})
		if err != nil {
			return n, err
		}
		n += changed
	}
	return n, nil
}

// holding selects the rollouts that hold device in a wave.
func holding(device string) func(r *Rollout) (bool, error) {
	return func(r *Rollout) (bool, error) { return r.WaveOf(device) >= 0, nil }
}

// count is 1 for a change, 0 for none.
func count(changed bool) int {
	if changed {
		return 1
	}
	return 0
}

// cached returns rollout id as stored, decoded once per revision. The
// rollout returned is shared: it must not be changed.
func (m *Manager) cached(ctx context.Context, id string) (*Rollout, error) {
	b, rev, err := m.Store.Get(ctx, id)
	if errors.Is(err, rollouts.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.decoded[id]; ok && c.rev == rev {
		return c.r, nil
	}
	r, err := decode(id, b)
	if err != nil {
		return nil, err
	}
	if m.decoded == nil {
		m.decoded = map[string]decoded{}
	}
	m.decoded[id] = decoded{rev: rev, r: r}
	return r, nil
}

// Report records device's outcome of target (a target's version or its
// name) in every rollout of that target with device in a started wave,
// and reports whether one did. A device's status carries its last outcome
// at every wake: a report equal to the one recorded changes nothing.
func (m *Manager) Report(ctx context.Context, device, target string, o Outcome, reason string) (bool, error) {
	ids, err := m.Store.List(ctx)
	if err != nil {
		return false, err
	}
	found := false
	for _, id := range ids {
		_, err := m.update(ctx, id, func(r *Rollout) (bool, error) {
			w := r.WaveOf(device)
			if r.Target.Version != target && r.Target.Name != target || w < 0 || w > r.Wave {
				return false, nil
			}
			old, ok := r.Results[device]
			if ok && old.Outcome == Left {
				return false, nil // it left the rollout: what it reports now is not counted
			}
			found = true
			if ok && old.Outcome == o && old.Reason == clip(reason) {
				return false, nil
			}
			return true, r.Report(device, o, reason, clock.Or(m.Clock).Now())
		})
		if err != nil {
			return found, err
		}
	}
	return found, nil
}
