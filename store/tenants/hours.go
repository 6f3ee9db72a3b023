package tenants

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
)

// hourKey names one tenant's hour in the hours bucket.
type hourKey struct {
	owner string
	start time.Time
}

func (k hourKey) bytes() []byte {
	return []byte(k.owner + " " + k.start.UTC().Format(time.RFC3339))
}

func keyOf(owner did.DID, t time.Time) hourKey {
	return hourKey{owner.String(), t.UTC().Truncate(time.Hour)}
}

func getHour(tx *bolt.Tx, k hourKey) (hour, error) {
	var h hour
	v := tx.Bucket(bucketHours).Get(k.bytes())
	if v == nil {
		return h, nil
	}
	if err := json.Unmarshal(v, &h); err != nil {
		return h, fmt.Errorf("tenants: damaged hour %s of tenant %s: %w", k.start.Format(time.RFC3339), k.owner, err)
	}
	return h, nil
}

// editHour applies fn to the stored hour k.
func editHour(tx *bolt.Tx, k hourKey, fn func(*hour)) error {
	h, err := getHour(tx, k)
	if err != nil {
		return err
	}
	fn(&h)
	return putJSON(tx, bucketHours, k.bytes(), h)
}

// accrue adds the bytes h has queued since h.Since to the byte-time of
// each hour that time spans and of the byte_hours period, and moves
// h.Since to now. A clock that went back accrues nothing.
func accrue(tx *bolt.Tx, owner did.DID, h *Held, now time.Time) error {
	h.AccruePeriod(now)
	from := h.Since
	h.Since = now
	if from.IsZero() || h.QueuedBytes == 0 || !now.After(from) {
		return nil
	}
	for from.Before(now) {
		end := from.UTC().Truncate(time.Hour).Add(time.Hour)
		if end.After(now) {
			end = now
		}
		ms := end.Sub(from).Milliseconds()
		if err := editHour(tx, keyOf(owner, from), func(x *hour) { x.ByteMillis += h.QueuedBytes * ms }); err != nil {
			return err
		}
		from = end
	}
	return nil
}

// raisePeaks raises the peaks of now's hour to what h holds.
func raisePeaks(tx *bolt.Tx, owner did.DID, h Held, now time.Time) error {
	return editHour(tx, keyOf(owner, now), func(x *hour) { x.Raise(h) })
}

// countRefusal counts a refusal by quota q in memory; Flush writes it.
func (l *Ledger) countRefusal(owner did.DID, q Quota, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.pending(keyOf(owner, now))
	if c.Refused == nil {
		c.Refused = map[Quota]int64{}
	}
	c.Refused[q]++
}

// pending returns the in-memory counts of k; l.mu is held.
func (l *Ledger) pending(k hourKey) *hour {
	if l.counts == nil {
		l.counts = map[hourKey]*hour{}
	}
	c := l.counts[k]
	if c == nil {
		c = &hour{}
		l.counts[k] = c
	}
	return c
}

// Flush writes the requests and refusals counted in memory into their
// hours. The relay calls it every few seconds and at Close; a crash loses
// at most what was counted since the last Flush (docs/tenants.md).
func (l *Ledger) Flush() error {
	l.mu.Lock()
	counts := l.counts
	l.counts = map[hourKey]*hour{}
	l.mu.Unlock()
	if len(counts) == 0 {
		return nil
	}
	err := l.update(func(tx *bolt.Tx) error {
		for k, c := range counts {
			err := editHour(tx, k, func(x *hour) {
				x.Requests += c.Requests
				for q, n := range c.Refused {
					if x.Refused == nil {
						x.Refused = map[Quota]int64{}
					}
					x.Refused[q] += n
				}
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		l.restore(counts)
	}
	return err
}

// restore puts counts that could not be written back, so that the next
// Flush writes them.
func (l *Ledger) restore(counts map[hourKey]*hour) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, c := range counts {
		p := l.pending(k)
		p.Requests += c.Requests
		for q, n := range c.Refused {
			if p.Refused == nil {
				p.Refused = map[Quota]int64{}
			}
			p.Refused[q] += n
		}
	}
}
