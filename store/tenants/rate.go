package tenants

import (
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
)

// window is a tenant's requests in one second of the relay's clock.
type window struct {
	second time.Time
	n      int64
}

// Allow counts one request of owner's senders and refuses it (a
// *QuotaError, 429) when the tenant already had its quota of requests in
// this second of the relay's clock: a fixed one-second window, so that
// no second ever serves more than the quota, however many senders race.
// A refused request is counted as a refusal, not as a request.
func (l *Ledger) Allow(owner did.DID) error {
	lim, err := l.requestQuota(owner)
	if err != nil {
		return err
	}
	now := l.clk.Now()
	sec := now.Truncate(time.Second)
	l.mu.Lock()
	w := l.windows[owner.String()]
	if w == nil {
		w = &window{}
		l.windows[owner.String()] = w
	}
	if !w.second.Equal(sec) {
		w.second, w.n = sec, 0
	}
	if lim > 0 && w.n >= lim {
		l.mu.Unlock()
		l.countRefusal(owner, QuotaRequests, now)
		return &QuotaError{Tenant: owner, Quota: QuotaRequests, Limit: lim, Used: w.n, Want: 1}
	}
	w.n++
	l.pending(keyOf(owner, now)).Requests++
	l.mu.Unlock()
	return nil
}

// requestQuota reads owner's requests-per-second quota.
func (l *Ledger) requestQuota(owner did.DID) (int64, error) {
	var lim int64
	err := l.db.View(func(tx *bolt.Tx) error {
		t, err := getTenant(tx, owner)
		lim = t.Quotas.RequestsPerSecond
		return err
	})
	return lim, err
}
