package ledger

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"
)

// MaxLost is how many possibly lost hand-offs the ledger keeps; the
// oldest beyond it are dropped (still counted by LostSummary.Dropped).
const MaxLost = 1024

var (
	bucketLost     = []byte("ledger-lost")
	keyLostDropped = []byte("lost-dropped")
)

// Lost is a hand-off to the application that a crash may have cut off
// with at-most-once notify: the object was admitted and acknowledged to
// the relay, and the application may or may not have received it. The
// agent never hands it over again; the ledger keeps it so that it is
// reported until an operator saw it (see RecordLost for how long).
type Lost struct {
	ObjectID string `cbor:"1,keyasint" json:"objectId"`
	Issuer   string `cbor:"2,keyasint" json:"issuer"`
	Purpose  string `cbor:"3,keyasint" json:"purpose"`
	// Seq is the relay's sequence number of the record.
	Seq uint64 `cbor:"4,keyasint,omitempty" json:"seq,omitempty"`
	// Attempt counts the hand-offs tried before the one cut off.
	Attempt int `cbor:"5,keyasint,omitempty" json:"attempt,omitempty"`
	// RecordedAt is when the next process found the hand-off cut off.
	RecordedAt time.Time `cbor:"6,keyasint" json:"recordedAt"`
	// Incarnation is the ledger incarnation that found it.
	Incarnation uint64 `cbor:"7,keyasint" json:"incarnation"`
	// Logged is set once a wake logged it (MarkLostLogged).
	Logged bool `cbor:"8,keyasint,omitempty" json:"logged,omitempty"`
	// ID numbers the record in the ledger, oldest first.
	ID uint64 `cbor:"-" json:"id"`
}

// LostSummary is what the ledger keeps of possibly lost hand-offs.
type LostSummary struct {
	// Kept lists the kept records, oldest first.
	Kept []Lost
	// Dropped counts the records ever dropped past MaxLost, perhaps
	// before an operator saw them, so that a count of possibly lost
	// hand-offs is never understated. Records dropped past the retention
	// were reported for that long and are not counted.
	Dropped uint64
}

// Count is how many possibly lost hand-offs the ledger kept or dropped
// past MaxLost.
func (s LostSummary) Count() int { return len(s.Kept) + int(s.Dropped) }

// RecordLost records, in tx, a possibly lost hand-off. Call it in the
// transaction that removes the hand-off from the caller's outbox, so that
// it is never in neither. Records are kept for Options.Retention after
// they were recorded, and once logged (MarkLostLogged; swept at Open),
// and at most MaxLost of them: enough to be seen in the device's status
// and logs, and bounded on a device that keeps crashing.
func (l *Ledger) RecordLost(tx *bolt.Tx, r Lost) error {
	b := tx.Bucket(bucketLost)
	if b == nil {
		return fmt.Errorf("ledger: lost bucket missing (was Open called?)")
	}
	n, err := b.NextSequence()
	if err != nil {
		return err
	}
	r.RecordedAt, r.Incarnation, r.Logged = l.clock.Now().UTC(), l.incarnation, false
	if err := putLost(b, n, r); err != nil {
		return err
	}
	if n <= MaxLost {
		return nil
	}
	c := b.Cursor()
	var dropped uint64
	for k, _ := c.First(); len(k) == 8 && binary.BigEndian.Uint64(k) <= n-MaxLost; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
		dropped++
	}
	return addDropped(tx, dropped)
}

// LostHandOffs returns the kept possibly lost hand-offs, oldest first.
func (l *Ledger) LostHandOffs(tx *bolt.Tx) (LostSummary, error) {
	var s LostSummary
	b := tx.Bucket(bucketLost)
	if b == nil {
		return s, fmt.Errorf("ledger: lost bucket missing (was Open called?)")
	}
	if v := tx.Bucket(bucketMeta).Get(keyLostDropped); len(v) == 8 {
		s.Dropped = binary.BigEndian.Uint64(v)
	}
	err := b.ForEach(func(k, v []byte) error {
		var r Lost
		if err := cbor.Unmarshal(v, &r); err != nil || len(k) != 8 {
			return fmt.Errorf("ledger: lost hand-off %x: %v", k, err)
		}
		r.ID = binary.BigEndian.Uint64(k)
		s.Kept = append(s.Kept, r)
		return nil
	})
	return s, err
}

// MarkLostLogged records, in tx, that the records numbered ids were
// logged.
func (l *Ledger) MarkLostLogged(tx *bolt.Tx, ids []uint64) error {
	b := tx.Bucket(bucketLost)
	for _, id := range ids {
		k := binary.BigEndian.AppendUint64(nil, id)
		v := b.Get(k)
		if v == nil {
			continue
		}
		var r Lost
		if err := cbor.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("ledger: lost hand-off %d: %v", id, err)
		}
		r.Logged = true
		if err := putLost(b, id, r); err != nil {
			return err
		}
	}
	return nil
}

// sweepLost drops the logged lost records older than cutoff. One no wake
// logged yet stays whatever its age (the clock that stamped it may have
// been wrong: a board without an RTC boots in 1970). It runs in Open's
// transaction.
func sweepLost(tx *bolt.Tx, cutoff time.Time) error {
	b, err := tx.CreateBucketIfNotExists(bucketLost)
	if err != nil {
		return err
	}
	var old [][]byte
	err = b.ForEach(func(k, v []byte) error {
		var r Lost
		if err := cbor.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("lost hand-off %x: %v", k, err)
		}
		if r.Logged && r.RecordedAt.Before(cutoff) {
			old = append(old, append([]byte(nil), k...))
		}
		return nil
	})
	for _, k := range old {
		if err == nil {
			err = b.Delete(k)
		}
	}
	return err
}

func addDropped(tx *bolt.Tx, n uint64) error {
	if n == 0 {
		return nil
	}
	meta := tx.Bucket(bucketMeta)
	if v := meta.Get(keyLostDropped); len(v) == 8 {
		n += binary.BigEndian.Uint64(v)
	}
	return meta.Put(keyLostDropped, binary.BigEndian.AppendUint64(nil, n))
}

func putLost(b *bolt.Bucket, id uint64, r Lost) error {
	v, err := encMode.Marshal(r)
	if err != nil {
		return fmt.Errorf("ledger: encoding lost hand-off: %w", err)
	}
	return b.Put(binary.BigEndian.AppendUint64(nil, id), v)
}
