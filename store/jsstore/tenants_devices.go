package jsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/tenants"
)

// A device joins a tenant in two writes: its claim (tdevice.<h(device)>,
// the owner DID, written at the sequence read, so that of two owners
// racing for one device one wins) and then the tenant's record, where the
// devices quota is spent. A claim whose tenant's record does not list the
// device (a refusal, or a relay that stopped between the two writes) is
// no enrolment: TenantOf does not count it, and once it is claimGrace
// old another owner's Enrol takes it over (a younger one may be an
// enrolment between its two writes, which must not lose its device).

// claimGrace is how old an unlisted claim is before another owner may
// take it over.
const claimGrace = time.Minute

// claim reads device's claim: its owner ("" for none), when it was
// written and the sequence to write it at. The claim is the owner DID, a
// newline and the writer's time in Unix nanoseconds.
func (s *Tenants) claim(ctx context.Context, device string) (string, time.Time, uint64, error) {
	data, rev, err := s.c.read(ctx, deviceKey(device))
	if err != nil || data == nil {
		return "", time.Time{}, rev, err
	}
	owner, at, ok := strings.Cut(string(data), "\n")
	ns, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil {
		return "", time.Time{}, 0, fmt.Errorf("jsstore: damaged claim of device %s", device)
	}
	return owner, time.Unix(0, ns), rev, nil
}

// holds reports whether owner's record lists device.
func (s *Tenants) holds(ctx context.Context, owner, device string) (bool, error) {
	t, err := s.tenant(ctx, owner)
	if errors.Is(err, tenants.ErrNoTenant) {
		return false, nil
	}
	return err == nil && slices.Contains(t.Devices, device), err
}

// take writes owner's claim on device at rev (or leaves it if it is
// owner's already); a lost race is errConflict, a device enrolled in
// another tenant ErrOtherTenant.
func (s *Tenants) take(ctx context.Context, owner, device string) (uint64, error) {
	cur, at, rev, err := s.claim(ctx, device)
	if err != nil || cur == owner {
		return rev, err
	}
	if cur != "" {
		in, err := s.holds(ctx, cur, device)
		if err != nil {
			return 0, err
		}
		if in || s.clk.Now().Sub(at) < claimGrace {
			return 0, fmt.Errorf("%w: %s is enrolled in tenant %s", tenants.ErrOtherTenant, device, cur)
		}
	}
	v := fmt.Appendf(nil, "%s\n%d", owner, s.clk.Now().UnixNano())
	if err := s.c.retry(ctx, func() error { return s.c.put(ctx, deviceKey(device), v, rev, 0) }); err != nil {
		return 0, err
	}
	_, _, rev, err = s.claim(ctx, device)
	return rev, err
}

// drop empties device's claim if it is still at rev.
func (s *Tenants) drop(ctx context.Context, device string, rev uint64) error {
	err := s.c.retry(ctx, func() error { return s.c.put(ctx, deviceKey(device), []byte{}, rev, 0) })
	if errors.Is(err, errConflict) {
		return nil // claimed again meanwhile: the new claim stands
	}
	return err
}

// Enrol implements tenants.Store.
func (s *Tenants) Enrol(owner, device did.DID) error {
	ctx, cancel := ctxOp()
	defer cancel()
	o, d := owner.String(), device.String()
	if _, err := s.tenant(ctx, o); err != nil {
		return err
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		rev, err := s.take(ctx, o, d)
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			return err
		}
		now := s.clk.Now()
		err = s.spend(ctx, o, now, func(t *jsTenant) error {
			if slices.Contains(t.Devices, d) {
				return errSame
			}
			if err := quota(t, tenants.QuotaDevices, 1); err != nil {
				return err
			}
			t.Devices = append(t.Devices, d)
			slices.Sort(t.Devices)
			t.Held.Devices = int64(len(t.Devices))
			return nil
		})
		var qe *tenants.QuotaError
		if errors.As(err, &qe) {
			s.cnt.Refusal(owner, tenants.QuotaDevices, now)
			return errors.Join(err, s.drop(ctx, d, rev))
		}
		return err
	}
	return fmt.Errorf("jsstore: enrolling %s: %d lost races", device, maxAttempts)
}

// quota refuses n more of q past t's quota.
func quota(t *jsTenant, q tenants.Quota, n int64) error {
	owner, _ := did.Parse(t.Owner)
	used := *t.Held.Field(q)
	if lim := t.Quotas.Limit(q); lim > 0 && used+n > lim {
		return &tenants.QuotaError{Tenant: owner, Quota: q, Limit: lim, Used: used, Want: n}
	}
	return nil
}

// Forget implements tenants.Store.
func (s *Tenants) Forget(device did.DID) error {
	ctx, cancel := ctxOp()
	defer cancel()
	d := device.String()
	owner, _, rev, err := s.claim(ctx, d)
	if err != nil || owner == "" {
		return err
	}
	err = s.spend(ctx, owner, s.clk.Now(), func(t *jsTenant) error {
		i := slices.Index(t.Devices, d)
		if i < 0 {
			return errSame
		}
		t.Devices = slices.Delete(t.Devices, i, i+1)
		t.Held.Devices = int64(len(t.Devices))
		return nil
	})
	if err != nil && !errors.Is(err, tenants.ErrNoTenant) {
		return err
	}
	return s.drop(ctx, d, rev)
}

// TenantOf implements tenants.Store: a device is in the tenant its claim
// names when that tenant's record lists it.
func (s *Tenants) TenantOf(device did.DID) (did.DID, bool, error) {
	ctx, cancel := ctxOp()
	defer cancel()
	owner, _, _, err := s.claim(ctx, device.String())
	if err != nil || owner == "" {
		return did.DID{}, false, err
	}
	in, err := s.holds(ctx, owner, device.String())
	if err != nil || !in {
		return did.DID{}, false, err
	}
	o, err := did.Parse(owner)
	if err != nil {
		return did.DID{}, false, fmt.Errorf("jsstore: damaged claim of device %s: %w", device, err)
	}
	return o, true, nil
}

// Move implements tenants.Store: successor's claim, then the tenant's
// record with successor in old's place, then old's claim emptied.
func (s *Tenants) Move(old, successor did.DID) error {
	ctx, cancel := ctxOp()
	defer cancel()
	o, n := old.String(), successor.String()
	owner, _, orev, err := s.claim(ctx, o)
	if err != nil || owner == "" {
		return err
	}
	if in, err := s.holds(ctx, owner, o); err != nil || !in {
		return err
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if _, err = s.take(ctx, owner, n); !errors.Is(err, errConflict) {
			break
		}
	}
	if err != nil {
		return err
	}
	err = s.editTenant(ctx, owner, func(t *jsTenant) error {
		i := slices.Index(t.Devices, o)
		if i < 0 {
			return errSame
		}
		t.Devices[i] = n
		slices.Sort(t.Devices)
		return nil
	})
	if err != nil {
		return err
	}
	return s.drop(ctx, o, orev)
}
