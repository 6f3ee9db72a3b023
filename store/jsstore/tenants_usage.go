package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// spend changes owner's record by fn after accruing the byte-time its
// queued bytes were held since they last changed into the record's
// byte_hours period (tenants.Held.AccruePeriod); once the record is
// written, the byte-time is added to the hours it spans and now's hour's
// peaks raised. The record's write is the quota's: the hours' writes
// that follow only add (a relay that stops between them loses at most
// that byte-time, never a quota's count).
func (s *Tenants) spend(ctx context.Context, owner string, now time.Time, fn func(*jsTenant) error) error {
	var split map[time.Time]int64
	var held tenants.Held
	err := s.editTenant(ctx, owner, func(t *jsTenant) error {
		split = tenants.Split(t.Held.QueuedBytes, t.Held.Since, now)
		t.Held.AccruePeriod(now)
		if now.After(t.Held.Since) {
			t.Held.Since = now
		}
		if err := fn(t); err != nil {
			return err
		}
		held = t.Held
		return nil
	})
	if err != nil {
		return err
	}
	for start, ms := range split {
		if err := s.editHour(ctx, owner, start, func(h *tenants.HourUsage) { h.ByteMillis += ms }); err != nil {
			return err
		}
	}
	return s.editHour(ctx, owner, tenants.HourOf(now), func(h *tenants.HourUsage) { h.Raise(held) })
}

// editHour changes owner's hour starting at start by fn.
func (s *Tenants) editHour(ctx context.Context, owner string, start time.Time, fn func(*tenants.HourUsage)) error {
	return s.c.change(ctx, hourKey(owner, start), 0, func(data []byte) ([]byte, error) {
		var h tenants.HourUsage
		if data != nil {
			if err := json.Unmarshal(data, &h); err != nil {
				return nil, fmt.Errorf("jsstore: damaged hour %s of tenant %s: %w", start.Format(time.RFC3339), owner, err)
			}
		}
		fn(&h)
		return json.Marshal(h)
	})
}

// Reserve implements tenants.Store.
func (s *Tenants) Reserve(owner did.DID, q tenants.Quota, n int64) error {
	if err := tenants.CheckStored(q, n); err != nil {
		return err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	now := s.clk.Now()
	err := s.spend(ctx, owner.String(), now, func(t *jsTenant) error {
		if err := quota(t, q, n); err != nil {
			return err
		}
		*t.Held.Field(q) += n
		return nil
	})
	var qe *tenants.QuotaError
	if errors.As(err, &qe) {
		s.cnt.Refusal(owner, q, now)
	}
	return err
}

// Release implements tenants.Store.
func (s *Tenants) Release(owner did.DID, q tenants.Quota, n int64) error {
	if err := tenants.CheckStored(q, n); err != nil {
		return err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	return s.spend(ctx, owner.String(), s.clk.Now(), func(t *jsTenant) error {
		if used := *t.Held.Field(q); n > used {
			return fmt.Errorf("%w: tenant %s holds %d of %s, %d released", tenants.ErrUnderflow, owner, used, q, n)
		}
		*t.Held.Field(q) -= n
		return nil
	})
}

// Observe implements tenants.Store.
func (s *Tenants) Observe(owner did.DID, q tenants.Quota, value int64) error {
	if err := tenants.CheckObserved(q, value); err != nil {
		return err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	return s.spend(ctx, owner.String(), s.clk.Now(), func(t *jsTenant) error {
		*t.Held.Field(q) = value
		return nil
	})
}

// Hold implements tenants.Store: the check and the new bytes are one
// write of the tenant's record at the sequence read, so that of relays
// racing, each accrues from the record the other wrote.
func (s *Tenants) Hold(owner did.DID, held, n int64) error {
	if err := tenants.CheckStored(tenants.QuotaQueuedBytes, min(held, n)); err != nil {
		return err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	now := s.clk.Now()
	err := s.spend(ctx, owner.String(), now, func(t *jsTenant) error {
		if err := tenants.ByteHoursReached(owner, t.Quotas, t.Held, now, n); err != nil {
			return err
		}
		t.Held.QueuedBytes = held + n
		return nil
	})
	var qe *tenants.QuotaError
	if errors.As(err, &qe) {
		s.cnt.Refusal(owner, tenants.QuotaByteHours, now)
	}
	return err
}

// Check implements tenants.Store.
func (s *Tenants) Check(owner did.DID, q tenants.Quota, held, n int64) error {
	ctx, cancel := ctxOp()
	defer cancel()
	t, err := s.tenant(ctx, owner.String())
	if err != nil {
		return err
	}
	if lim := t.Quotas.Limit(q); lim > 0 && held+n > lim {
		s.cnt.Refusal(owner, q, s.clk.Now())
		return &tenants.QuotaError{Tenant: owner, Quota: q, Limit: lim, Used: held, Want: n}
	}
	return nil
}

// Allow implements tenants.Store: the requests of one second of the
// relay's clock are one count in trate.<h(owner)>.<unix second>, spent
// at the sequence read, so that no second serves more than the quota
// whichever relays the requests reach (docs/tenants.md). A tenant with
// no rate quota is not counted there.
func (s *Tenants) Allow(owner did.DID) error {
	ctx, cancel := ctxOp()
	defer cancel()
	t, err := s.tenant(ctx, owner.String())
	if err != nil {
		return err
	}
	now := s.clk.Now()
	lim := t.Quotas.RequestsPerSecond
	if lim > 0 {
		k := "trate." + hkey(t.Owner) + "." + strconv.FormatInt(now.Unix(), 10)
		err = s.c.change(ctx, k, time.Minute, func(data []byte) ([]byte, error) {
			used := int64(0)
			if data != nil {
				n, perr := strconv.ParseInt(string(data), 10, 64)
				if perr != nil {
					return nil, fmt.Errorf("jsstore: damaged request count %s: %w", k, perr)
				}
				used = n
			}
			if used >= lim {
				return nil, &tenants.QuotaError{Tenant: owner, Quota: tenants.QuotaRequests, Limit: lim, Used: used, Want: 1}
			}
			return strconv.AppendInt(nil, used+1, 10), nil
		})
	}
	var qe *tenants.QuotaError
	switch {
	case errors.As(err, &qe):
		s.cnt.Refusal(owner, tenants.QuotaRequests, now)
		return err
	case err != nil:
		return err
	}
	s.cnt.Request(owner, now)
	return nil
}

// Flush implements tenants.Store: the counted requests and refusals are
// added into their hours; what could not be written is kept for the next
// Flush.
func (s *Tenants) Flush() error {
	counts := s.cnt.Take()
	if len(counts) == 0 {
		return nil
	}
	ctx, cancel := ctxOp()
	defer cancel()
	var errs []error
	for owner, hours := range counts {
		for start, c := range hours {
			err := s.editHour(ctx, owner, start, func(h *tenants.HourUsage) { h.Add(c) })
			if err != nil {
				errs = append(errs, err)
				continue
			}
			delete(hours, start)
		}
	}
	if err := errors.Join(errs...); err != nil {
		s.cnt.Restore(counts)
		return err
	}
	return nil
}

// Usage implements tenants.Store.
func (s *Tenants) Usage(owner did.DID, t time.Time, key *did.PrivateKey) (tenancy.Record, error) {
	if err := s.Flush(); err != nil {
		return tenancy.Record{}, err
	}
	ctx, cancel := ctxOp()
	defer cancel()
	now := s.clk.Now()
	o := owner.String()
	if err := s.spend(ctx, o, now, func(*jsTenant) error { return nil }); err != nil {
		return tenancy.Record{}, err
	}
	start := tenants.HourOf(t)
	data, _, err := s.c.read(ctx, hourKey(o, start))
	if err != nil {
		return tenancy.Record{}, err
	}
	var h tenants.HourUsage
	if data != nil {
		if err := json.Unmarshal(data, &h); err != nil {
			return tenancy.Record{}, fmt.Errorf("jsstore: damaged hour %s of tenant %s: %w", start.Format(time.RFC3339), o, err)
		}
	}
	return tenants.Record(owner, start, now, h, key)
}
