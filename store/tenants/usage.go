package tenants

import (
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// Usage returns owner's record of the hour that holds t, signed by key
// (the relay's). The byte-time held up to now is accrued first, and the
// counted requests written.
func (l *Ledger) Usage(owner did.DID, t time.Time, key *did.PrivateKey) (tenancy.Record, error) {
	if err := l.Flush(); err != nil {
		return tenancy.Record{}, err
	}
	now := l.clk.Now()
	k := keyOf(owner, t)
	var h hour
	err := l.update(func(tx *bolt.Tx) error {
		if _, err := getTenant(tx, owner); err != nil {
			return err
		}
		held, err := getHeld(tx, owner)
		if err != nil {
			return err
		}
		if err := accrue(tx, owner, &held, now); err != nil {
			return err
		}
		if err := putJSON(tx, bucketHeld, []byte(owner.String()), held); err != nil {
			return err
		}
		h, err = getHour(tx, k)
		return err
	})
	if err != nil {
		return tenancy.Record{}, err
	}
	return Record(owner, k.start, now, h, key)
}
