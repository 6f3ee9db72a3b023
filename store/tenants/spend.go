package tenants

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
)

// Enrol puts device in owner's tenant, within its devices quota. A device
// already in the tenant is no change; one in another tenant is
// ErrOtherTenant (its owner forgets it first).
func (l *Ledger) Enrol(owner, device did.DID) error {
	now := l.clk.Now()
	return l.update(func(tx *bolt.Tx) error {
		t, err := getTenant(tx, owner)
		if err != nil {
			return err
		}
		switch cur := tx.Bucket(bucketDevices).Get([]byte(device.String())); {
		case cur == nil:
		case string(cur) == owner.String():
			return nil
		default:
			return fmt.Errorf("%w: %s is enrolled in tenant %s", ErrOtherTenant, device, cur)
		}
		if err := l.spend(tx, t, QuotaDevices, 1, now); err != nil {
			return err
		}
		return tx.Bucket(bucketDevices).Put([]byte(device.String()), []byte(owner.String()))
	})
}

// Forget takes device out of its tenant; a device in none is no change.
func (l *Ledger) Forget(device did.DID) error {
	now := l.clk.Now()
	return l.update(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bucketDevices).Get([]byte(device.String()))
		if cur == nil {
			return nil
		}
		owner, err := did.Parse(string(cur))
		if err != nil {
			return fmt.Errorf("tenants: damaged owner of device %s: %w", device, err)
		}
		if err := l.release(tx, owner, QuotaDevices, 1, now); err != nil {
			return err
		}
		return tx.Bucket(bucketDevices).Delete([]byte(device.String()))
	})
}

// TenantOf returns the tenant device is enrolled in; ok is false for a
// device in none.
func (l *Ledger) TenantOf(device did.DID) (owner did.DID, ok bool, err error) {
	err = l.db.View(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bucketDevices).Get([]byte(device.String()))
		if cur == nil {
			return nil
		}
		owner, err = did.Parse(string(cur))
		ok = err == nil
		return err
	})
	return owner, ok, err
}

// Devices lists owner's devices, ordered by DID.
func (l *Ledger) Devices(owner did.DID) ([]string, error) {
	var out []string
	err := l.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketDevices).ForEach(func(k, v []byte) error {
			if string(v) == owner.String() {
				out = append(out, string(k))
			}
			return nil
		})
	})
	return out, err
}

// Reserve spends n of owner's stored quota (QuotaQueuedBytes or
// QuotaKeyPackageBytes) before the bytes are stored: a *QuotaError if it
// would go past the quota, and then nothing is spent. The caller Releases
// them if storing fails, and when the bytes leave the relay.
func (l *Ledger) Reserve(owner did.DID, q Quota, n int64) error {
	if err := storedQuota(q, n); err != nil {
		return err
	}
	now := l.clk.Now()
	return l.update(func(tx *bolt.Tx) error {
		t, err := getTenant(tx, owner)
		if err != nil {
			return err
		}
		return l.spend(tx, t, q, n, now)
	})
}

// Release gives back n of owner's stored quota q. Releasing more than
// the tenant holds is ErrUnderflow and changes nothing.
func (l *Ledger) Release(owner did.DID, q Quota, n int64) error {
	if err := storedQuota(q, n); err != nil {
		return err
	}
	now := l.clk.Now()
	return l.update(func(tx *bolt.Tx) error {
		return l.release(tx, owner, q, n, now)
	})
}

func storedQuota(q Quota, n int64) error {
	if q != QuotaQueuedBytes && q != QuotaKeyPackageBytes {
		return fmt.Errorf("tenants: %s is not a stored quota", q)
	}
	if n < 0 {
		return fmt.Errorf("tenants: negative amount %d of %s", n, q)
	}
	return nil
}

// observedQuota checks Observe's arguments: a stored quota, or
// QuotaUpdateBytes (which the update repository counts); n not negative.
func observedQuota(q Quota, n int64) error {
	switch {
	case q != QuotaUpdateBytes:
		return storedQuota(q, n)
	case n < 0:
		return fmt.Errorf("tenants: negative amount %d of %s", n, q)
	}
	return nil
}

// spend adds n to t's holding of q if its quota allows; a refusal is
// counted in the hour.
func (l *Ledger) spend(tx *bolt.Tx, t tenant, q Quota, n int64, now time.Time) error {
	owner, err := did.Parse(t.Owner)
	if err != nil {
		return err
	}
	h, err := getHeld(tx, owner)
	if err != nil {
		return err
	}
	used := *h.field(q)
	if lim := t.Quotas.Limit(q); lim > 0 && used+n > lim {
		l.countRefusal(owner, q, now)
		return &QuotaError{Tenant: owner, Quota: q, Limit: lim, Used: used, Want: n}
	}
	return l.change(tx, owner, h, q, n, now)
}

func (l *Ledger) release(tx *bolt.Tx, owner did.DID, q Quota, n int64, now time.Time) error {
	h, err := getHeld(tx, owner)
	if err != nil {
		return err
	}
	if used := *h.field(q); n > used {
		return fmt.Errorf("%w: tenant %s holds %d of %s, %d released", ErrUnderflow, owner, used, q, n)
	}
	return l.change(tx, owner, h, q, -n, now)
}

// change adds delta to h's q, accruing the byte-time held so far into
// the hours first and raising the hour's peaks.
func (l *Ledger) change(tx *bolt.Tx, owner did.DID, h Held, q Quota, delta int64, now time.Time) error {
	if err := accrue(tx, owner, &h, now); err != nil {
		return err
	}
	*h.field(q) += delta
	if err := raisePeaks(tx, owner, h, now); err != nil {
		return err
	}
	return putJSON(tx, bucketHeld, []byte(owner.String()), h)
}

func (h *Held) field(q Quota) *int64 {
	switch q {
	case QuotaDevices:
		return &h.Devices
	case QuotaKeyPackageBytes:
		return &h.KeyPackageBytes
	case QuotaUpdateBytes:
		return &h.UpdateBytes
	}
	return &h.QueuedBytes
}

// Check is for a quota whose holdings another store counts (the relay's
// queue, for QuotaQueuedBytes): it refuses, with a *QuotaError counted in
// the hour, when held (what the tenant holds now, counted by the caller)
// plus n would pass owner's quota q. The caller makes the check and the
// store's write one step, so that the quota holds exactly.
func (l *Ledger) Check(owner did.DID, q Quota, held, n int64) error {
	var lim int64
	err := l.db.View(func(tx *bolt.Tx) error {
		t, err := getTenant(tx, owner)
		lim = t.Quotas.Limit(q)
		return err
	})
	if err != nil {
		return err
	}
	if lim > 0 && held+n > lim {
		l.countRefusal(owner, q, l.clk.Now())
		return &QuotaError{Tenant: owner, Quota: q, Limit: lim, Used: held, Want: n}
	}
	return nil
}

// Observe records that owner holds value of q now, as another store
// counts it (the relay's queue for QuotaQueuedBytes, its update
// repository for QuotaUpdateBytes): the byte-time held
// since the last change is accrued into the hours first, and the hour's
// peak raised. The relay samples its stores every few seconds, so the
// byte-hours of a running relay are a sum over those samples.
func (l *Ledger) Observe(owner did.DID, q Quota, value int64) error {
	if err := observedQuota(q, value); err != nil {
		return err
	}
	now := l.clk.Now()
	return l.update(func(tx *bolt.Tx) error {
		if _, err := getTenant(tx, owner); err != nil {
			return err
		}
		h, err := getHeld(tx, owner)
		if err != nil {
			return err
		}
		return l.change(tx, owner, h, q, value-*h.field(q), now)
	})
}

// Move puts successor in old's tenant in old's place, in one
// transaction: a device whose key was rotated (its old DID retired) stays
// in its tenant and its devices quota is unchanged. An old DID in no
// tenant is no change; a successor already in a tenant is
// ErrOtherTenant.
func (l *Ledger) Move(old, successor did.DID) error {
	return l.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDevices)
		owner := b.Get([]byte(old.String()))
		if owner == nil {
			return nil
		}
		if cur := b.Get([]byte(successor.String())); cur != nil {
			return fmt.Errorf("%w: %s is enrolled in tenant %s", ErrOtherTenant, successor, cur)
		}
		owner = append([]byte(nil), owner...)
		if err := b.Delete([]byte(old.String())); err != nil {
			return err
		}
		return b.Put([]byte(successor.String()), owner)
	})
}

// Hold is the byte_hours quota's check of a request to queue n bytes for
// one of owner's devices, which the caller makes under the tenant's Lock
// with held, the bytes the queue holds for all the tenant's devices now
// (counted by the caller, as for Check). The byte-time the tenant's
// bytes were held since the ledger's last change is accrued up to now;
// if the period's byte-hours have then reached owner's byte_hours quota,
// Hold refuses with a *QuotaError (counted in the hour) and changes
// nothing. Otherwise the tenant holds held+n from now on, and the caller
// stores its n bytes before it unlocks (or Observes held again if it
// cannot). Records already queued are never refused: they keep accruing
// until they leave the queue.
func (l *Ledger) Hold(owner did.DID, held, n int64) error {
	if err := storedQuota(QuotaQueuedBytes, min(held, n)); err != nil {
		return err
	}
	now := l.clk.Now()
	return l.update(func(tx *bolt.Tx) error {
		t, err := getTenant(tx, owner)
		if err != nil {
			return err
		}
		h, err := getHeld(tx, owner)
		if err != nil {
			return err
		}
		if err := ByteHoursReached(owner, t.Quotas, h, now, n); err != nil {
			l.countRefusal(owner, QuotaByteHours, now)
			return err
		}
		return l.change(tx, owner, h, QuotaQueuedBytes, held+n-h.QueuedBytes, now)
	})
}
