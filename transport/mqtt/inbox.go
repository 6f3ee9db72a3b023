package mqtt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

// bucketInbox holds the commands received and not yet answered, keyed by
// arrival (the bucket's sequence, uint64 big-endian).
var bucketInbox = []byte("mqtt-inbox")

// MaxInbox bounds the commands received and not yet answered. Beyond it the
// client stops acknowledging, so the broker holds the rest (its flow
// control) until the inbox drains.
const MaxInbox = 1024

// stored is a received command as the inbox keeps it: the message, and
// once admitted what an answer after a crash needs.
type stored struct {
	Payload     []byte    `cbor:"1,keyasint"`
	ContentType string    `cbor:"2,keyasint,omitempty"`
	Correlation []byte    `cbor:"3,keyasint,omitempty"`
	At          time.Time `cbor:"4,keyasint"`
	// Admitted is set in the admission transaction; the entry is deleted
	// in the completion transaction. An admitted entry found at start
	// belongs to a command whose outcome is unknown.
	Admitted bool   `cbor:"5,keyasint,omitempty"`
	ID       string `cbor:"6,keyasint,omitempty"`
	Operator string `cbor:"7,keyasint,omitempty"`
	Seq      uint64 `cbor:"8,keyasint,omitempty"`
	Op       string `cbor:"9,keyasint,omitempty"`
	Key      string `cbor:"10,keyasint,omitempty"`
	CBOR     bool   `cbor:"11,keyasint,omitempty"`
}

// inboxEntry is one stored command and its key.
type inboxEntry struct {
	key uint64
	msg stored
}

var inboxEnc = func() cbor.EncMode {
	em, err := cbor.EncOptions{Time: cbor.TimeUnixMicro}.EncMode()
	if err != nil {
		panic(err)
	}
	return em
}()

// errInboxFull is returned by storeInbox when the inbox is at MaxInbox.
var errInboxFull = errors.New("mqtt: inbox full")

// storeInbox records received commands in one transaction and returns
// their entries. The caller acknowledges them to the broker only after it
// returned: from then on the device, not the broker, keeps them.
func (c *Client) storeInbox(msgs []stored) ([]inboxEntry, error) {
	out := make([]inboxEntry, 0, len(msgs))
	err := c.cfg.DB.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketInbox)
		if err != nil {
			return err
		}
		if b.Stats().KeyN+len(msgs) > MaxInbox {
			return fmt.Errorf("%w: %d commands waiting", errInboxFull, b.Stats().KeyN)
		}
		for _, m := range msgs {
			k, err := b.NextSequence()
			if err != nil {
				return err
			}
			v, err := inboxEnc.Marshal(m)
			if err != nil {
				return err
			}
			if err := b.Put(inboxKey(k), v); err != nil {
				return err
			}
			out = append(out, inboxEntry{key: k, msg: m})
		}
		return nil
	})
	return out, store.Err(err)
}

// loadInbox returns every stored command in arrival order.
func (c *Client) loadInbox() ([]inboxEntry, error) {
	var out []inboxEntry
	err := c.cfg.DB.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketInbox)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var m stored
			if len(k) != 8 || cbor.Unmarshal(v, &m) != nil {
				return fmt.Errorf("mqtt: corrupt inbox entry %x", k)
			}
			out = append(out, inboxEntry{key: binary.BigEndian.Uint64(k), msg: m})
			return nil
		})
	})
	return out, err
}

// markAdmitted records, in the admission transaction, that the command in
// entry key was admitted as a.
func markAdmitted(tx *bolt.Tx, key uint64, a Admission, asCBOR bool) error {
	b := tx.Bucket(bucketInbox)
	v := b.Get(inboxKey(key))
	if v == nil {
		return fmt.Errorf("mqtt: inbox entry %d missing", key)
	}
	var m stored
	if err := cbor.Unmarshal(v, &m); err != nil {
		return fmt.Errorf("mqtt: inbox entry %d: %w", key, err)
	}
	m.Admitted, m.ID, m.Operator, m.Seq, m.Op, m.Key, m.CBOR = true, a.ID, a.Operator, a.Seq, a.Op, a.Key, asCBOR
	nv, err := inboxEnc.Marshal(m)
	if err != nil {
		return err
	}
	return b.Put(inboxKey(key), nv)
}

// deleteInbox removes entry key in tx (it may be gone already).
func deleteInbox(tx *bolt.Tx, key uint64) error {
	b := tx.Bucket(bucketInbox)
	if b == nil {
		return nil
	}
	return b.Delete(inboxKey(key))
}

func inboxKey(k uint64) []byte { return binary.BigEndian.AppendUint64(nil, k) }

// recoverInbox settles what a previous run left in the inbox, before the
// dispatcher starts. A command admitted and not completed may or may not
// have taken effect: the handler says how to answer it (Interrupted), the
// answer goes through the durable outbound queue, and the entry is
// forgotten. A command stored and not admitted is returned, to run with
// the backlog.
func (c *Client) recoverInbox() ([]*Delivery, error) {
	entries, err := c.loadInbox()
	if err != nil {
		return nil, err
	}
	var pending []*Delivery
	for _, e := range entries {
		if !e.msg.Admitted {
			pending = append(pending, c.parseEntry(e))
			continue
		}
		if err := c.answerInterrupted(e); err != nil {
			return nil, err
		}
	}
	return pending, nil
}

// answerInterrupted queues the answer to a command a restart interrupted
// and removes it from the inbox, in one transaction.
func (c *Client) answerInterrupted(e inboxEntry) error {
	m := e.msg
	d := &Delivery{c: c, entry: e.key, CBOR: m.CBOR, Key: c.Key()}
	a := Admission{ID: m.ID, Operator: m.Operator, Seq: m.Seq, Op: m.Op, Key: m.Key}
	return store.Err(c.cfg.DB.Update(func(tx *bolt.Tx) error {
		r, ok, err := c.cfg.Handler.Interrupted(tx, d, a)
		if err != nil || !ok {
			return errors.Join(err, deleteInbox(tx, e.key))
		}
		c.log.Warn("a command was interrupted by a restart", "op", m.Op, "id", m.ID, "key", m.Key)
		_, err = d.Complete(tx, m.ID, r)
		return err
	}))
}
