package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"
)

// Held is an action waiting in the gate.
type Held struct {
	Action Action    `cbor:"1,keyasint"`
	Reason string    `cbor:"2,keyasint"`
	HeldAt time.Time `cbor:"3,keyasint"`
}

func (g *Gate) putHold(tx *bolt.Tx, a Action, reason string) error {
	return putHold(tx, Held{Action: a, Reason: reason, HeldAt: g.clock.Now().UTC()})
}

func putHold(tx *bolt.Tx, h Held) error {
	v, err := encMode.Marshal(h)
	if err != nil {
		return fmt.Errorf("gate: encoding hold: %w", err)
	}
	return tx.Bucket(bucketHolds).Put([]byte(h.Action.LedgerKey()), v)
}

func getHold(tx *bolt.Tx, key string) (Held, error) {
	v := tx.Bucket(bucketHolds).Get([]byte(key))
	if v == nil {
		return Held{}, fmt.Errorf("%w: %q", ErrNoHold, key)
	}
	var h Held
	if err := cbor.Unmarshal(v, &h); err != nil {
		return Held{}, fmt.Errorf("gate: decoding hold %q: %w", key, err)
	}
	return h, nil
}

// Holds returns every held action in key order.
func (g *Gate) Holds(tx *bolt.Tx) ([]Held, error) {
	var out []Held
	err := tx.Bucket(bucketHolds).ForEach(func(k, v []byte) error {
		var h Held
		if err := cbor.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("gate: decoding hold %q: %w", k, err)
		}
		out = append(out, h)
		return nil
	})
	return out, err
}

// Hold holds action a in tx for the owner with reason, whatever the
// policy says: the runtime's own actions that need the owner's
// confirmation (an update whose target says so, docs/updates.md) are held
// with OwnerOnly set, which keeps Redecide from releasing them. Like
// DecideAt it refuses a key already completed, indeterminate, in flight or
// held (Decision Refuse with the reason); otherwise the Decision is Hold.
func (g *Gate) Hold(tx *bolt.Tx, a Action, reason string) (Decision, error) {
	if d, refused, err := g.refused(tx, a); err != nil || refused {
		return d, err
	}
	return Decision{Verdict: Hold, Reason: reason}, g.putHold(tx, a, reason)
}

// Confirm releases the held action with ledger key key for execution: the
// owner approved it. It reserves the key in tx and removes the hold; the
// caller runs the action after tx committed. It returns an error wrapping
// ErrNoHold for an unknown key, ErrExpired when the object expired (Sweep
// drops it) at now (the trusted time), or the ledger's *KeyError when the
// key must not run.
func (g *Gate) Confirm(tx *bolt.Tx, key string, now time.Time) (Held, error) {
	h, err := getHold(tx, key)
	if err != nil {
		return Held{}, err
	}
	if expired(h, now) {
		return h, fmt.Errorf("%w: held action %q", ErrExpired, key)
	}
	if err := g.run(tx, h.Action); err != nil {
		return Held{}, err
	}
	return h, tx.Bucket(bucketHolds).Delete([]byte(key))
}

// Deny drops the held action with ledger key key: the owner refused it. It
// returns an error wrapping ErrNoHold for an unknown key.
func (g *Gate) Deny(tx *bolt.Tx, key string) (Held, error) {
	h, err := getHold(tx, key)
	if err != nil {
		return Held{}, err
	}
	return h, tx.Bucket(bucketHolds).Delete([]byte(key))
}

// Sweep drops, in tx, the held actions whose objects expired (a receiver
// must not retain a payload beyond its expiry, draft Section 8.3) and
// returns them for reporting. now is the time expiry is judged by: the
// trusted time (runtime/trusted), as at dequeue.
func (g *Gate) Sweep(tx *bolt.Tx, now time.Time) ([]Held, error) {
	hs, err := g.Holds(tx)
	if err != nil {
		return nil, err
	}
	var out []Held
	for _, h := range hs {
		if expired(h, now) {
			if err := tx.Bucket(bucketHolds).Delete([]byte(h.Action.LedgerKey())); err != nil {
				return nil, err
			}
			out = append(out, h)
		}
	}
	return out, nil
}

func expired(h Held, now time.Time) bool {
	return !h.Action.Expires.IsZero() && !now.Before(h.Action.Expires)
}

// Redecide runs every held action through the policy again, in tx: after
// Resume, after a fresh pulse ended a suspension, or after a new policy.
// Actions the policy now allows are reserved, charged, removed from the
// holds and returned for the caller to run once tx committed; the others
// stay held, with their reason brought up to date. Expired holds are
// dropped (see Sweep). now is the time the policy, its liveness and the
// expiries are judged by: the trusted time, as for DecideAt.
func (g *Gate) Redecide(tx *bolt.Tx, now time.Time) (run []Held, err error) {
	if _, err := g.Sweep(tx, now); err != nil {
		return nil, err
	}
	hs, err := g.Holds(tx)
	if err != nil {
		return nil, err
	}
	for _, h := range hs {
		if h.Action.OwnerOnly {
			continue // only Confirm runs it
		}
		reason, cs, err := g.evaluate(tx, h.Action, now)
		if err != nil {
			return nil, err
		}
		key := []byte(h.Action.LedgerKey())
		if !allowed(reason) {
			if reason != h.Reason {
				h.Reason = reason
				if err := putHold(tx, h); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := tx.Bucket(bucketHolds).Delete(key); err != nil {
			return nil, err
		}
		if err := g.run(tx, h.Action, cs...); err != nil {
			return nil, err
		}
		h.Reason = reason
		run = append(run, h)
	}
	return run, nil
}

// actionPayload is what ActionOf reads from an action's payload.
type actionPayload struct {
	IdempotencyKey string      `json:"idempotencyKey"`
	Amount         json.Number `json:"amount"`
	Unit           string      `json:"unit"`
	Act            string      `json:"act"`
	Res            string      `json:"res"`
}

func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// Unstart puts back, in tx, an action Decide or Confirm released but the
// runtime did not start because the owner's halt arrived first (suspension
// and halt are prospective for work not yet started): the ledger key is
// released, since the effect certainly did not happen, and the action is
// held with reason "halted".
func (g *Gate) Unstart(tx *bolt.Tx, a Action) error {
	if err := g.ledger.Release(tx, a.LedgerKey(), "halted before the effect started"); err != nil {
		return err
	}
	return g.putHold(tx, a, "halted")
}
