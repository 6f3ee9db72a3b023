package tenants

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// Store is the tenant ledger the relay uses: Ledger (one bbolt file, one
// relay) or store/jsstore's Tenants (a JetStream key-value bucket shared
// by every relay of a cluster). tenantstest is the contract both keep:
// every quota a Store checks holds exactly however many callers race for
// it, through one Store or through several over the same data.
type Store interface {
	// Put creates the tenant owner or changes its quotas (the host's act).
	Put(owner did.DID, q Quotas) error
	// Tenants lists the tenants, ordered by owner DID.
	Tenants() ([]Info, error)
	// Tenant returns one tenant, or ErrNoTenant.
	Tenant(owner did.DID) (Info, error)
	// Enrol puts device in owner's tenant within its devices quota; a
	// device in another tenant is ErrOtherTenant.
	Enrol(owner, device did.DID) error
	// Forget takes device out of its tenant.
	Forget(device did.DID) error
	// TenantOf returns the tenant device is in; ok false for none.
	TenantOf(device did.DID) (owner did.DID, ok bool, err error)
	// Devices lists owner's devices, ordered by DID.
	Devices(owner did.DID) ([]string, error)
	// Move puts successor in old's tenant in old's place.
	Move(old, successor did.DID) error
	// Reserve spends n of a stored quota (queued or KeyPackage bytes), or
	// refuses with a *QuotaError and spends nothing.
	Reserve(owner did.DID, q Quota, n int64) error
	// Release gives n of a stored quota back; more than is held is
	// ErrUnderflow and changes nothing.
	Release(owner did.DID, q Quota, n int64) error
	// Check refuses (a *QuotaError, counted) when held plus n would pass
	// owner's quota q; the caller counts held under Lock.
	Check(owner did.DID, q Quota, held, n int64) error
	// Hold is the byte_hours quota's check of n more queued bytes for
	// owner, whose devices' queues hold held bytes now (counted by the
	// caller under Lock): past the quota a *QuotaError and no change;
	// else the byte-time so far is accrued and the tenant holds held+n.
	Hold(owner did.DID, held, n int64) error
	// Observe records that owner holds value of q now (the relay's
	// samples; for QuotaUpdateBytes also each upload and removal),
	// accruing byte-time and raising the hour's peaks.
	Observe(owner did.DID, q Quota, value int64) error
	// Allow counts one request of owner's senders against its
	// requests-per-second quota, or refuses it with a *QuotaError.
	Allow(owner did.DID) error
	// Lock takes the lock name, one holder at a time through every Store
	// over the same data, until unlock: the relay holds a tenant's lock
	// while it counts what the tenant stores and stores more.
	Lock(ctx context.Context, name string) (unlock func(), err error)
	// SetOperators replaces a tenant's operators by the owner's signed
	// list obj and returns the tenant.
	SetOperators(obj []byte) (did.DID, error)
	// OperatorTenants returns the tenants whose owners name op.
	OperatorTenants(op did.DID) ([]did.DID, error)
	// MayAct reports whether op may act on device (see Ledger.MayAct).
	MayAct(op, device did.DID) (inTenant bool, err error)
	// Usage returns owner's record of the hour that holds t, signed by key.
	Usage(owner did.DID, t time.Time, key *did.PrivateKey) (tenancy.Record, error)
	// Flush writes the requests and refusals counted in memory.
	Flush() error
	Close() error
}

var _ Store = (*Ledger)(nil)

// CheckOperatorList checks a tenant owner's signed operator list as
// SetOperators does before storing it: a Governed Object with purpose
// PurposeOperators, signed (Ed25519, RFC 8032, over its RFC 8785 form:
// package governed), not expired at now. The caller checks that it was
// issued after the list it replaces.
func CheckOperatorList(obj []byte, now time.Time) (*governed.Object, tenancy.OperatorList, error) {
	o, list, err := tenancy.ParseOperatorList(obj)
	if err != nil {
		return nil, list, err
	}
	if exp, ok := o.Expiry(); ok && !now.Before(exp) {
		return nil, list, fmt.Errorf("tenants: operator list expired at %s; the owner signs a new one", exp.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return o, list, nil
}

// NotNewer is the refusal of an operator list issued no later than the
// one it would replace.
func NotNewer(issued, current time.Time) error {
	return fmt.Errorf("tenants: operator list issued %s is not newer than the tenant's (%s)", issued.UTC().Format("2006-01-02T15:04:05.000Z"), current.UTC().Format("2006-01-02T15:04:05.000Z"))
}

// OperatorTenantsOf is Store.OperatorTenants over s.Tenants.
func OperatorTenantsOf(s Store, op did.DID) ([]did.DID, error) {
	ts, err := s.Tenants()
	var out []did.DID
	for _, t := range ts {
		if slices.Contains(t.Operators, op.String()) {
			out = append(out, t.Owner)
		}
	}
	return out, err
}

// MayActOn is Store.MayAct over s.TenantOf and s.Tenant: only an
// operator the device's tenant's owner named may act on it.
func MayActOn(s Store, op, device did.DID) (inTenant bool, err error) {
	owner, ok, err := s.TenantOf(device)
	if err != nil || !ok {
		return false, err
	}
	t, err := s.Tenant(owner)
	if err != nil {
		return true, err
	}
	if !slices.Contains(t.Operators, op.String()) {
		return true, fmt.Errorf("%w: %s is not named by the owner of tenant %s", ErrNotOperator, op, owner)
	}
	return true, nil
}

// CheckStored checks a Reserve's or Release's arguments: q a stored
// quota, n not negative.
func CheckStored(q Quota, n int64) error { return storedQuota(q, n) }

// CheckObserved checks Observe's arguments: q a stored quota or
// QuotaUpdateBytes, n not negative.
func CheckObserved(q Quota, n int64) error { return observedQuota(q, n) }

// HourUsage is a tenant's usage in one hour of the relay's clock, as a
// Store keeps it.
type HourUsage = hour

// HourOf is the start of the hour that holds t.
func HourOf(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// Split divides the byte-time of bytes held from from to now over the
// hours it spans, in byte-milliseconds by the hour's start. A clock that
// went back, or nothing held, is none.
func Split(bytes int64, from, now time.Time) map[time.Time]int64 {
	out := map[time.Time]int64{}
	if from.IsZero() || bytes == 0 || !now.After(from) {
		return out
	}
	for from.Before(now) {
		end := HourOf(from).Add(time.Hour)
		if end.After(now) {
			end = now
		}
		out[HourOf(from)] += bytes * end.Sub(from).Milliseconds()
		from = end
	}
	return out
}

// Raise raises h's peaks to what held holds.
func (h *hour) Raise(held Held) {
	h.PeakDevices = max(h.PeakDevices, held.Devices)
	h.PeakQueuedBytes = max(h.PeakQueuedBytes, held.QueuedBytes)
	h.PeakKeyPackages = max(h.PeakKeyPackages, held.KeyPackageBytes)
	h.PeakUpdateBytes = max(h.PeakUpdateBytes, held.UpdateBytes)
}

// Add adds the requests and refusals counted in c to h.
func (h *hour) Add(c *hour) {
	h.Requests += c.Requests
	for q, n := range c.Refused {
		if h.Refused == nil {
			h.Refused = map[Quota]int64{}
		}
		h.Refused[q] += n
	}
	h.ByteMillis += c.ByteMillis
}

// Record is owner's usage h of the hour starting at start as a record
// signed by key, complete when now is past the hour.
func Record(owner did.DID, start, now time.Time, h HourUsage, key *did.PrivateKey) (tenancy.Record, error) {
	r := tenancy.Record{
		Tenant: owner.String(), Relay: key.DID().String(), Hour: start.Format(time.RFC3339),
		Complete: !now.Before(start.Add(time.Hour)), Requests: h.Requests, Refused: h.Refused,
		PeakDevices: h.PeakDevices, PeakQueuedBytes: h.PeakQueuedBytes, PeakKeyPackageBytes: h.PeakKeyPackages,
		MilliByteHours: h.ByteMillis / 3600,
	}
	if h.PeakUpdateBytes > 0 {
		r.PeakUpdateBytes = &h.PeakUpdateBytes
	}
	return r, r.Sign(key)
}

// Field returns the holding of quota q in h (QueuedBytes for a quota
// that is not stored).
func (h *Held) Field(q Quota) *int64 { return h.field(q) }

// Counter is the in-memory count of requests and refusals a Store
// writes at Flush, by tenant and hour; its methods are safe for
// concurrent use.
type Counter struct{ l Ledger }

// Refusal counts a refusal of owner's by quota q at now.
func (c *Counter) Refusal(owner did.DID, q Quota, now time.Time) { c.l.countRefusal(owner, q, now) }

// Request counts a request of owner's at now.
func (c *Counter) Request(owner did.DID, now time.Time) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.pending(keyOf(owner, now)).Requests++
}

// Take returns the counts and forgets them, by owner DID and hour start.
func (c *Counter) Take() map[string]map[time.Time]*HourUsage {
	c.l.mu.Lock()
	counts := c.l.counts
	c.l.counts = map[hourKey]*hour{}
	c.l.mu.Unlock()
	out := map[string]map[time.Time]*HourUsage{}
	for k, v := range counts {
		if out[k.owner] == nil {
			out[k.owner] = map[time.Time]*HourUsage{}
		}
		out[k.owner][k.start] = v
	}
	return out
}

// Restore puts counts Take returned back, for a Flush that failed.
func (c *Counter) Restore(counts map[string]map[time.Time]*HourUsage) {
	m := map[hourKey]*hour{}
	for o, hs := range counts {
		for s, h := range hs {
			m[hourKey{o, s}] = h
		}
	}
	c.l.restore(m)
}
