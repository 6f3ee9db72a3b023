package jsstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/tenants"
)

// Tenants is store/tenants.Store in the shared bucket (<prefix>_SHARED,
// shared.go), so that every relay of a cluster keeps one ledger. Every
// change is a write at the sequence read (compare-and-swap); of relays
// racing for a tenant's last room one wins and the others read again, so
// each quota the ledger spends holds exactly across relays
// (docs/tenants.md, "JetStream"). Keys (h(x) is the base64url SHA-256 of
// x):
//
//	tenants                   the owner DIDs, JSON
//	tenant.<h(owner)>         the tenant: quotas, operators, what it holds
//	                          and its devices (jsTenant, JSON)
//	tdevice.<h(device)>       the device's claim: its owner DID
//	thour.<h(owner)>.<unix>   the tenant's usage in the hour starting at
//	                          unix seconds (tenants.HourUsage, JSON)
//	trate.<h(owner)>.<unix>   requests served in that second; TTL a minute
//	tlock.<h(name)>           Lock's holder; TTL lockTTL
//
// A tenant's devices are in its record, so enrolment is one write there
// after the device's claim: the record must fit a NATS message (1 MiB by
// default), about 15,000 devices a tenant with did:key DIDs.
type Tenants struct {
	c   *Conn
	clk clock.Clock
	own bool
	cnt tenants.Counter
}

var _ tenants.Store = (*Tenants)(nil)

// Tenants returns the tenant ledger over c's shared bucket on clk (the
// relay's clock: hours and seconds are of it). Closing it writes its
// counts and does not close c.
func (c *Conn) Tenants(clk clock.Clock) *Tenants { return &Tenants{c: c, clk: clock.Or(clk)} }

// OwnTenants is Tenants whose Close closes c too.
func (c *Conn) OwnTenants(clk clock.Clock) *Tenants {
	t := c.Tenants(clk)
	t.own = true
	return t
}

// jsTenant is a tenant as stored.
type jsTenant struct {
	Owner           string         `json:"owner"`
	Quotas          tenants.Quotas `json:"quotas"`
	Operators       []string       `json:"operators,omitempty"`
	HostSeesDevices bool           `json:"hostSeesDevices,omitempty"`
	ListIssued      time.Time      `json:"listIssued,omitzero"`
	Held            tenants.Held   `json:"held"`
	Devices         []string       `json:"devices,omitempty"`
}

// lockTTL is how long a Lock holder that never unlocks (its relay died)
// keeps the lock.
const lockTTL = 10 * time.Second

func hkey(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func tenantKey(owner string) string { return "tenant." + hkey(owner) }
func deviceKey(dev string) string   { return "tdevice." + hkey(dev) }
func hourKey(owner string, start time.Time) string {
	return "thour." + hkey(owner) + "." + strconv.FormatInt(start.Unix(), 10)
}

// errSame is what a change's fn returns to write nothing and succeed.
var errSame = errors.New("jsstore: no change")

// change reads key, lets fn make its new value from the value read (nil:
// none) and writes that at the sequence read, again after a lost race.
// fn's error ends it (errSame: with success, nothing written).
func (c *Conn) change(ctx context.Context, key string, ttl time.Duration, fn func([]byte) ([]byte, error)) error {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var data []byte
		var rev uint64
		if err := c.retry(ctx, func() (err error) { data, rev, err = c.last(ctx, key); return err }); err != nil {
			return fmt.Errorf("jsstore: reading %s: %w", key, err)
		}
		v, err := fn(data)
		if errors.Is(err, errSame) {
			return nil
		}
		if err != nil {
			return err
		}
		err = c.retry(ctx, func() error { return c.put(ctx, key, v, rev, ttl) })
		if !errors.Is(err, errConflict) {
			if err != nil {
				return fmt.Errorf("jsstore: writing %s: %w", key, err)
			}
			return nil
		}
	}
	return fmt.Errorf("jsstore: %s: %d lost races", key, maxAttempts)
}

// read reads key once, through the retries.
func (c *Conn) read(ctx context.Context, key string) (data []byte, rev uint64, err error) {
	err = c.retry(ctx, func() (err error) { data, rev, err = c.last(ctx, key); return err })
	if err != nil {
		err = fmt.Errorf("jsstore: reading %s: %w", key, err)
	}
	return data, rev, err
}

func ctxOp() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// tenant reads owner's record; ErrNoTenant if there is none.
func (s *Tenants) tenant(ctx context.Context, owner string) (jsTenant, error) {
	data, _, err := s.c.read(ctx, tenantKey(owner))
	if err != nil {
		return jsTenant{}, err
	}
	return decodeTenant(owner, data)
}

func decodeTenant(owner string, data []byte) (jsTenant, error) {
	var t jsTenant
	if data == nil {
		return t, tenants.ErrNoTenant
	}
	if err := json.Unmarshal(data, &t); err != nil || t.Owner != owner {
		return t, fmt.Errorf("jsstore: damaged record of tenant %s: %v", owner, err)
	}
	return t, nil
}

// editTenant changes owner's record by fn at the sequence read; the
// tenant must exist (ErrNoTenant).
func (s *Tenants) editTenant(ctx context.Context, owner string, fn func(*jsTenant) error) error {
	return s.c.change(ctx, tenantKey(owner), 0, func(data []byte) ([]byte, error) {
		t, err := decodeTenant(owner, data)
		if err != nil {
			return nil, err
		}
		if err := fn(&t); err != nil {
			return nil, err
		}
		return json.Marshal(t)
	})
}

// Put implements tenants.Store.
func (s *Tenants) Put(owner did.DID, q tenants.Quotas) error {
	if owner.IsZero() {
		return fmt.Errorf("tenants: a tenant needs an owner DID")
	}
	if err := q.Check(); err != nil {
		return err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	o := owner.String()
	err := s.c.change(ctx, tenantKey(o), 0, func(data []byte) ([]byte, error) {
		t, err := decodeTenant(o, data)
		if errors.Is(err, tenants.ErrNoTenant) {
			t, err = jsTenant{Owner: o}, nil
		}
		if err != nil {
			return nil, err
		}
		t.Quotas = q
		return json.Marshal(t)
	})
	if err != nil {
		return err
	}
	return s.c.change(ctx, "tenants", 0, func(data []byte) ([]byte, error) {
		var owners []string
		if data != nil {
			if err := json.Unmarshal(data, &owners); err != nil {
				return nil, fmt.Errorf("jsstore: damaged list of tenants: %w", err)
			}
		}
		if slices.Contains(owners, o) {
			return nil, errSame
		}
		owners = append(owners, o)
		slices.Sort(owners)
		return json.Marshal(owners)
	})
}

// Tenants implements tenants.Store.
func (s *Tenants) Tenants() ([]tenants.Info, error) {
	ctx, cancel := ctxOp()
	defer cancel()
	data, _, err := s.c.read(ctx, "tenants")
	if err != nil || data == nil {
		return nil, err
	}
	var owners []string
	if err := json.Unmarshal(data, &owners); err != nil {
		return nil, fmt.Errorf("jsstore: damaged list of tenants: %w", err)
	}
	var out []tenants.Info
	for _, o := range owners {
		t, err := s.tenant(ctx, o)
		if err != nil {
			return nil, err
		}
		out = append(out, infoOf(t))
	}
	return out, nil
}

// Tenant implements tenants.Store.
func (s *Tenants) Tenant(owner did.DID) (tenants.Info, error) {
	ctx, cancel := ctxOp()
	defer cancel()
	t, err := s.tenant(ctx, owner.String())
	if err != nil {
		return tenants.Info{}, err
	}
	return infoOf(t), nil
}

func infoOf(t jsTenant) tenants.Info {
	owner, _ := did.Parse(t.Owner)
	return tenants.Info{Owner: owner, Quotas: t.Quotas, Held: t.Held, Operators: slices.Clone(t.Operators), HostSeesDevices: t.HostSeesDevices}
}

// Devices implements tenants.Store.
func (s *Tenants) Devices(owner did.DID) ([]string, error) {
	ctx, cancel := ctxOp()
	defer cancel()
	t, err := s.tenant(ctx, owner.String())
	if errors.Is(err, tenants.ErrNoTenant) {
		return nil, nil
	}
	return t.Devices, err
}

// Close implements tenants.Store: it writes the counts, and closes the
// connection if OwnTenants made it.
func (s *Tenants) Close() error {
	err := s.Flush()
	if s.own {
		s.c.Close()
	}
	return err
}

// Lock implements tenants.Store: the lock is the key tlock.<h(name)>,
// created by its holder with a TTL of lockTTL and emptied at unlock;
// another taker waits, reading it again, until it is empty or its TTL
// ended (a holder that died). A holder that keeps it longer than lockTTL
// loses it to the next taker: the relay holds it for one count and one
// write (docs/tenants.md).
func (s *Tenants) Lock(ctx context.Context, name string) (func(), error) {
	k := "tlock." + hkey(name)
	me := nonce()
	wait := time.Millisecond
	for {
		data, rev, err := s.c.read(ctx, k)
		if err != nil {
			return nil, err
		}
		if data == nil {
			err = s.c.retry(ctx, func() error { return s.c.put(ctx, k, me, rev, lockTTL) })
			if err == nil {
				return func() { s.unlock(k, me) }, nil
			}
			if !errors.Is(err, errConflict) {
				return nil, fmt.Errorf("jsstore: taking lock %s: %w", name, err)
			}
			continue
		}
		if err := clock.Sleep(ctx, s.c.clk, wait); err != nil {
			return nil, err
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// unlock empties the lock key if it is still me's.
func (s *Tenants) unlock(k string, me []byte) {
	ctx, cancel := ctxOp()
	defer cancel()
	s.c.change(ctx, k, time.Second, func(data []byte) ([]byte, error) {
		if string(data) != string(me) {
			return nil, errSame
		}
		return []byte{}, nil
	})
}

// SetOperators implements tenants.Store.
func (s *Tenants) SetOperators(obj []byte) (did.DID, error) {
	o, list, err := tenants.CheckOperatorList(obj, s.clk.Now())
	if err != nil {
		return did.DID{}, err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	err = s.editTenant(ctx, o.Issuer.String(), func(t *jsTenant) error {
		if !o.IssuedAt.After(t.ListIssued) {
			return tenants.NotNewer(o.IssuedAt, t.ListIssued)
		}
		t.Operators, t.HostSeesDevices, t.ListIssued = list.Operators, list.HostSeesDevices, o.IssuedAt
		return nil
	})
	if errors.Is(err, tenants.ErrNoTenant) {
		err = fmt.Errorf("%w: the operator list is signed by %s", err, o.Issuer)
	}
	return o.Issuer, err
}

// OperatorTenants implements tenants.Store.
func (s *Tenants) OperatorTenants(op did.DID) ([]did.DID, error) {
	return tenants.OperatorTenantsOf(s, op)
}

// MayAct implements tenants.Store.
func (s *Tenants) MayAct(op, device did.DID) (bool, error) { return tenants.MayActOn(s, op, device) }
