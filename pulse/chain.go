package pulse

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
)

var (
	bucket         = []byte("pulse")
	keyHead        = []byte("head")
	keyPredecessor = []byte("predecessor")
)

// Chain is the agent's pulse chain, whose head (the latest pulse document)
// persists in bbolt so the chain continues across restarts and power-offs.
type Chain struct {
	db  *bolt.DB
	key *did.PrivateKey

	mu sync.Mutex
	// mu guards the following fields: the head this Chain last signed
	// (Next) or verified (Head), and its pulse. A stored head of the
	// same bytes is not parsed and verified again: once a wake, the
	// verification would only find the signature this process made.
	knownDoc []byte
	known    Pulse
}

// OpenChain prepares the chain's bucket in db for the agent whose key is key.
func OpenChain(db *bolt.DB, key *did.PrivateKey) (*Chain, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pulse: opening chain: %w", err)
	}
	return &Chain{db: db, key: key}, nil
}

// Next makes, signs and records as the new head, in tx, the pulse that
// follows the current head. The caller commits tx before it publishes the
// document, so that a crash can never make two pulses with one sequence
// number. A wall clock set back since the last pulse does not break the
// chain: the new pulse's time is never before its predecessor's.
func (c *Chain) Next(tx *bolt.Tx, now, nextWake time.Time, mode string, halted bool) ([]byte, Pulse, error) {
	prevDoc, prev, ok, err := c.Head(tx)
	if err != nil {
		return nil, Pulse{}, err
	}
	p := Pulse{Agent: c.key.DID(), Seq: 1, At: now.Truncate(time.Millisecond), NextWake: nextWake, Mode: mode, Halted: halted}
	if ok {
		p.Seq = prev.Seq + 1
		p.Prev = Hash(prevDoc)
		if p.At.Before(prev.At) {
			p.At = prev.At
		}
	}
	doc, err := Sign(c.key, p)
	if err != nil {
		return nil, Pulse{}, err
	}
	// The pulse as Parse would return doc's, which signs p's wire form.
	signed, err := p.wire().pulse()
	if err != nil {
		return nil, Pulse{}, err
	}
	c.remember(doc, signed)
	b := tx.Bucket(bucket)
	if err := b.Put(keyHead, doc); err != nil {
		return nil, Pulse{}, fmt.Errorf("pulse: recording head: %w", err)
	}
	if err := b.Delete(keyPredecessor); err != nil {
		return nil, Pulse{}, fmt.Errorf("pulse: recording head: %w", err)
	}
	return doc, p, nil
}

// Succeed records in tx that the chain continues under a new key after a
// key rotation: the head that predecessor signed stays the head, and the
// next pulse, signed by the chain's new key, follows it (seq + 1, prev its
// hash), so a rotation neither restarts the chain nor breaks it. The
// handover that proves the succession is the caller's (the old key signs
// it); VerifyNext, which knows no handover, reports the link where the
// agent changes as ErrBrokenChain.
func Succeed(tx *bolt.Tx, predecessor did.DID) error {
	b, err := tx.CreateBucketIfNotExists(bucket)
	if err != nil {
		return fmt.Errorf("pulse: %w", err)
	}
	if err := b.Put(keyPredecessor, []byte(predecessor.String())); err != nil {
		return fmt.Errorf("pulse: recording the predecessor: %w", err)
	}
	return nil
}

// Head returns the latest pulse in tx, or ok false before the first one. A
// stored head that no longer verifies (another key, unless Succeed named
// it the predecessor; corruption) is an error: the chain must not silently
// restart. A head byte for byte the one this Chain last signed or
// verified is not verified again.
func (c *Chain) Head(tx *bolt.Tx) (doc []byte, p Pulse, ok bool, err error) {
	b := tx.Bucket(bucket)
	if b == nil {
		return nil, Pulse{}, false, fmt.Errorf("pulse: bucket missing (was OpenChain called?)")
	}
	v := b.Get(keyHead)
	if v == nil {
		return nil, Pulse{}, false, nil
	}
	doc = append([]byte(nil), v...)
	p, ok = c.recall(doc)
	if !ok {
		if p, err = Parse(doc); err != nil {
			return nil, Pulse{}, false, fmt.Errorf("pulse: stored chain head: %w", err)
		}
		c.remember(doc, p)
	}
	if p.Agent != c.key.DID() && string(b.Get(keyPredecessor)) != p.Agent.String() {
		return nil, Pulse{}, false, fmt.Errorf("pulse: stored chain head belongs to %s, not %s", p.Agent, c.key.DID())
	}
	return doc, p, true, nil
}

// remember keeps doc, signed or verified, and its pulse p.
func (c *Chain) remember(doc []byte, p Pulse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.knownDoc, c.known = bytes.Clone(doc), p
}

// recall returns the pulse of doc when doc is the head this Chain last
// signed or verified.
func (c *Chain) recall(doc []byte) (Pulse, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.knownDoc == nil || !bytes.Equal(doc, c.knownDoc) {
		return Pulse{}, false
	}
	return c.known, true
}

// DB returns the bbolt file of the chain.
func (c *Chain) DB() *bolt.DB { return c.db }
