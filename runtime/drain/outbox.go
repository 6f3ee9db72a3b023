package drain

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/gate"
)

var (
	bucketOutbox   = []byte("drain-outbox")
	bucketOutcomes = []byte("drain-outcomes")
)

// DefaultMaxOutcomes is how many handler outcomes the agent keeps.
const DefaultMaxOutcomes = 4096

var encMode, _ = cbor.EncOptions{Time: cbor.TimeUnixMicro}.EncMode()

// entry is an outbox record: a hand-off the batch transaction committed to
// and the application has not been given yet.
type entry struct {
	ObjectID string    `cbor:"1,keyasint"`
	Issuer   string    `cbor:"2,keyasint"`
	Purpose  string    `cbor:"3,keyasint"`
	Seq      uint64    `cbor:"4,keyasint,omitempty"`
	Expires  time.Time `cbor:"5,keyasint,omitempty"`
	// Delivery is the JSON of the deliver.Delivery: kept with
	// at-least-once notify, so the hand-off can be repeated after a
	// crash; omitted with at-most-once notify, which never repeats one.
	Delivery []byte `cbor:"6,keyasint,omitempty"`
	// Action is the gated action of a consequential object; its ledger
	// key guards the effect.
	Action *gate.Action `cbor:"7,keyasint,omitempty"`
	// Attempt counts hand-offs tried.
	Attempt int `cbor:"8,keyasint,omitempty"`
	// NotStarted says the last hand-off certainly did not reach the
	// application (deliver.ErrNotStarted: the program could not be
	// started): it is repeated even with at-most-once notify, whose entry
	// then keeps Delivery too. Cleared while a repetition is in flight.
	NotStarted bool `cbor:"9,keyasint,omitempty"`
}

// pending is an entry with its outbox key and the delivery to make.
type pending struct {
	key      []byte
	entry    entry
	delivery deliver.Delivery
}

// OutcomeRecord is one recorded hand-off, kept in bbolt (the newest
// MaxOutcomes).
type OutcomeRecord struct {
	At       time.Time       `cbor:"1,keyasint" json:"at"`
	Seq      uint64          `cbor:"2,keyasint,omitempty" json:"seq,omitempty"`
	ObjectID string          `cbor:"3,keyasint" json:"objectId"`
	Issuer   string          `cbor:"4,keyasint" json:"issuer"`
	Purpose  string          `cbor:"5,keyasint" json:"purpose"`
	Key      string          `cbor:"6,keyasint,omitempty" json:"idempotencyKey,omitempty"`
	Outcome  deliver.Outcome `cbor:"7,keyasint" json:"outcome"`
	Err      string          `cbor:"8,keyasint,omitempty" json:"error,omitempty"`
	Attempt  int             `cbor:"9,keyasint,omitempty" json:"attempt,omitempty"`
}

// putPending writes p's entry to the outbox in tx and sets its key.
func putPending(tx *bolt.Tx, p *pending) error {
	b := tx.Bucket(bucketOutbox)
	n, err := b.NextSequence()
	if err != nil {
		return err
	}
	p.key = binary.BigEndian.AppendUint64(nil, n)
	v, err := encMode.Marshal(p.entry)
	if err != nil {
		return fmt.Errorf("drain: encoding outbox entry: %w", err)
	}
	return b.Put(p.key, v)
}

// loadOutbox returns every outbox entry in order.
func loadOutbox(tx *bolt.Tx) ([]pending, error) {
	var out []pending
	err := tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
		var e entry
		if err := cbor.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("drain: outbox entry %x: %w", k, err)
		}
		p := pending{key: append([]byte(nil), k...), entry: e}
		if e.Delivery != nil {
			if err := json.Unmarshal(e.Delivery, &p.delivery); err != nil {
				return fmt.Errorf("drain: outbox entry %x: %w", k, err)
			}
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// recordOutcomes appends outcomes and trims the oldest beyond max.
func recordOutcomes(tx *bolt.Tx, recs []OutcomeRecord, max int) error {
	b := tx.Bucket(bucketOutcomes)
	for _, r := range recs {
		n, err := b.NextSequence()
		if err != nil {
			return err
		}
		v, err := encMode.Marshal(r)
		if err != nil {
			return err
		}
		if err := b.Put(binary.BigEndian.AppendUint64(nil, n), v); err != nil {
			return err
		}
	}
	c := b.Cursor()
	for k, _ := c.First(); k != nil && b.Sequence() >= uint64(max) && binary.BigEndian.Uint64(k) <= b.Sequence()-uint64(max); k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// Outcomes returns the recorded outcomes, oldest first.
func Outcomes(tx *bolt.Tx) ([]OutcomeRecord, error) {
	b := tx.Bucket(bucketOutcomes)
	if b == nil {
		return nil, errors.New("drain: outcomes bucket missing")
	}
	var out []OutcomeRecord
	err := b.ForEach(func(k, v []byte) error {
		var r OutcomeRecord
		if err := cbor.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("drain: outcome %x: %w", k, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}
