package tenants

import (
	"time"

	"github.com/torpor-dev/torpor/did"
)

// The byte_hours quota counts the byte-time a tenant's queued bytes are
// held in one period: the calendar month of the relay's clock, in UTC.
// That is what a hosted service bills by, and a month is a whole number
// of the usage records' hours, so a month's byte-hours are the sum of
// its hours' records (docs/tenants.md, "Byte-hours").

// milliPerHour is the byte-milliseconds of one byte-hour.
const milliPerHour = 3_600_000

// PeriodOf is the start of the byte_hours period that holds t: its
// calendar month in UTC.
func PeriodOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// PeriodByteMillisAt is the byte-time, in byte-milliseconds, that h's
// queued bytes were held in the period that holds now, up to now: what
// was accrued at h's last change (when that was in the same period) plus
// the bytes held since then times the time since (from the period's
// start, when the last change was in an earlier one).
func (h Held) PeriodByteMillisAt(now time.Time) int64 {
	p := PeriodOf(now)
	var acc int64
	if h.Period.Equal(p) {
		acc = h.PeriodByteMillis
	}
	if h.Since.IsZero() || h.QueuedBytes == 0 {
		return acc
	}
	from := h.Since
	if from.Before(p) {
		from = p
	}
	if now.After(from) {
		acc += h.QueuedBytes * now.Sub(from).Milliseconds()
	}
	return acc
}

// AccruePeriod brings h's period total up to now (PeriodByteMillisAt).
// The caller moves h.Since to now after it, as it accrues the hours. A
// clock that went back accrues nothing.
func (h *Held) AccruePeriod(now time.Time) {
	if !h.Since.IsZero() && now.Before(h.Since) {
		return
	}
	h.PeriodByteMillis = h.PeriodByteMillisAt(now)
	h.Period = PeriodOf(now)
}

// ByteHoursReached refuses a request to queue for owner when the
// byte-hours its bytes h were held this period, up to now, have reached
// quota q's byte_hours: a *QuotaError (507) naming the quota, its limit
// in byte-hours and the period's byte-hours so far (rounded down). n is
// the bytes the request would queue. Without that quota, nil.
func ByteHoursReached(owner did.DID, q Quotas, h Held, now time.Time, n int64) error {
	lim := q.ByteHours
	if lim <= 0 {
		return nil
	}
	if used := h.PeriodByteMillisAt(now); used >= lim*milliPerHour {
		return &QuotaError{Tenant: owner, Quota: QuotaByteHours, Limit: lim, Used: used / milliPerHour, Want: n}
	}
	return nil
}
