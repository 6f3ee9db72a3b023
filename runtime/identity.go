package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// Key rotation.
//
// The agent's identity is its did:key: the relay keys its queue, card,
// KeyPackages and pulses by it, and its MLS credentials bind it. RotateKey
// replaces it in four steps, so that a crash at any point leaves one
// identity in force with state that belongs to it:
//
//  1. drain the old identity's queue, in the wake in progress;
//  2. record the rotation (old, new, handover) in bbolt, and publish a last
//     state under the old DID: mode sleep with no next wake, and the
//     handover as its retirement (link wire.State.Retirement), so the relay
//     answers its senders 410 Gone naming the new DID;
//  3. write the new key file atomically (temp file, fsync, rename): the
//     commit point;
//  4. restart (Run returns ErrRestart; the process starts again).
//
// At the next start, open finds the key file's DID different from the
// identity the store belongs to, and the recorded rotation naming both: in
// one transaction it drops the MLS state of the old identity (package
// session's groups and KeyPackage pool, whose credentials name the old DID:
// senders re-establish sessions with the new DID's KeyPackages), continues
// the pulse chain under the new key (pulse.Succeed), keeps the hourly
// window's wake minute of the first identity (it derives from the DID, and
// a rotation is no reason to move the device's window), and records the
// new identity. The boot wake then publishes the card, KeyPackages and pulses
// under the new DID. A key file that changed without a recorded rotation is
// refused: the store's state would belong to someone else.
//
// What reaches the old DID between step 1 and the retirement stays at the
// relay until its TTL: the new identity never drains that queue. Senders
// learn the new DID from the relay's 410 and from the handover (the reply
// to the operator's rotate-keys).

var (
	keyIdentity = []byte("identity") // the DID the agent's state belongs to
	keyRotation = []byte("rotation") // a rotation whose key file may not be written yet
	keyHandover = []byte("handover") // the handover of the last rotation applied
	// bucketSessions is package session's root bucket (docs/sessions.md,
	// "Storage layout"): every group and KeyPackage in it is bound to the
	// agent's identity by its MLS credential.
	bucketSessions = []byte("session")
)

// rotation is a key rotation recorded before the new key file is written.
type rotation struct {
	Old      string    `cbor:"1,keyasint"`
	New      string    `cbor:"2,keyasint"`
	Handover []byte    `cbor:"3,keyasint"`
	At       time.Time `cbor:"4,keyasint"`
}

// ErrRestart is returned by Run after Restart (the reboot command, a key
// rotation): the agent stopped so that its process starts again.
// cmd/torpor-agent exits with status 75 then, which systemd's
// Restart=on-failure restarts.
var ErrRestart = errors.New("runtime: restart requested")

// rotateTimeout bounds the old identity's last publication: a network
// round trip, on the unscaled clock.
const rotateTimeout = 10 * time.Second

// Restart ends Run, which returns ErrRestart once the wake in progress
// ended, the management channel closed and the store closed.
func (a *Agent) Restart(why string) {
	a.mu.Lock()
	stop := a.stop
	a.restart = true
	a.mu.Unlock()
	a.log.Warn("restarting", "why", why)
	if stop != nil {
		stop(ErrRestart)
	}
}

// ended is Run's result once its context ended.
func ended(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), ErrRestart) {
		return ErrRestart
	}
	return nil
}

// RotateKey replaces the agent's identity with next (see "Key rotation"
// above), given handover, the object in which the old key names next as
// its successor; it returns once the new key file is written and the
// restart is under way. It needs Config.Store.KeyFile and a wake in progress
// with a link to the relay (ErrAsleep), since the old identity's queue is
// drained first; on an error the old key stays in force.
func (a *Agent) RotateKey(ctx context.Context, next *did.PrivateKey, handover []byte) error {
	if a.cfg.Store.KeyFile == "" {
		return errors.New("runtime: no key file configured, so the new key could not be kept")
	}
	a.mu.Lock()
	w := a.cur
	a.mu.Unlock()
	if w == nil || !w.linked() {
		return fmt.Errorf("%w: the old identity's queue must be drained first; rotate in a window with the relay reachable", ErrAsleep)
	}
	rep, err := w.drain()
	if err != nil {
		return fmt.Errorf("runtime: draining the old identity's queue: %w", err)
	}
	old := a.cfg.Key.DID()
	rot := rotation{Old: old.String(), New: next.DID().String(), Handover: handover, At: a.clock.Now().UTC()}
	enc, err := encMode.Marshal(rot)
	if err != nil {
		return err
	}
	if err := a.Pipeline().db.Update(func(tx *bolt.Tx) error { return putRaw(tx, keyRotation, enc) }); err != nil {
		return fmt.Errorf("runtime: recording the rotation: %w", err)
	}
	if err := w.retire(ctx, handover); err != nil {
		return fmt.Errorf("runtime: publishing the old identity's last state: %w", err)
	}
	if err := did.SaveKey(a.cfg.Store.KeyFile, next, true); err != nil {
		w.unretire()
		return fmt.Errorf("runtime: writing the new key file: %w", err)
	}
	a.log.Warn("key rotated; restarting under the new identity", "old", old.String(), "new", rot.New,
		"drained", rep.Records, "leftQueued", rep.Deferred)
	a.Restart("key rotated")
	return nil
}

// retire publishes the old identity's last state: asleep with no next
// wake, its card for that and the wake's pulse, and handover as its
// retirement, with which the relay answers the old DID's senders 410 Gone
// naming the new one. The wake publishes nothing more under it.
func (w *wakeRun) retire(ctx context.Context, handover []byte) error {
	a := w.a
	an := w.announcement()
	an.mode, an.next = wake.Sleep, time.Time{}
	w.mu.Lock()
	w.retired = true
	w.sentCard = nil // the retirement's card replaces the relay's
	w.mu.Unlock()
	w.drainMu.Lock()
	l := w.l
	w.drainMu.Unlock()
	card, _, err := a.card(an.mode, l.Hello())
	if err != nil {
		return err
	}
	ctx, cancel := clock.WithTimeout(ctx, clock.Unscaled(a.clock), rotateTimeout)
	defer cancel()
	_, err = l.Publish(ctx, wire.State{Mode: string(wake.Sleep), Card: card, Pulse: an.pulse, Bounds: &a.cfg.Relay.Bounds, Retirement: handover})
	return err
}

// unretire undoes retire after a rotation failed: the state in force is
// published again.
func (w *wakeRun) unretire() {
	w.mu.Lock()
	w.retired = false
	w.mu.Unlock()
	w.publish()
}

// isRetired reports whether the wake's identity was retired (RotateKey).
func (w *wakeRun) isRetired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.retired
}

// checkIdentity makes sure the store belongs to the configured key: a
// first start records it, a recorded rotation to it is applied, anything
// else is refused.
func (a *Agent) checkIdentity(db *bolt.DB) error {
	self := a.cfg.Key.DID().String()
	var adopted *rotation
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketAgent)
		if err != nil {
			return err
		}
		stored := string(b.Get(keyIdentity))
		var rot rotation
		pending := b.Get(keyRotation) != nil && cbor.Unmarshal(b.Get(keyRotation), &rot) == nil
		switch {
		case stored == "" || stored == self:
			// A rotation recorded but never written to the key file
			// did not happen.
			if err := b.Delete(keyRotation); err != nil {
				return err
			}
			return b.Put(keyIdentity, []byte(self))
		case pending && rot.Old == stored && rot.New == self:
			adopted = &rot
			return adopt(tx, b, rot)
		}
		return fmt.Errorf("runtime: this store belongs to %s, but the key file holds %s; start with that key or an empty data directory (rotate keys with the rotate-keys command)", stored, self)
	})
	if err != nil {
		return err
	}
	if adopted != nil {
		a.log.Warn("identity rotated: the MLS sessions and KeyPackages of the old identity are dropped; the pulse chain continues",
			"old", adopted.Old, "new", adopted.New, "rotatedAt", adopted.At.Format(time.RFC3339))
	}
	return nil
}

// adopt applies a recorded rotation in tx.
func adopt(tx *bolt.Tx, b *bolt.Bucket, rot rotation) error {
	old, err := did.Parse(rot.Old)
	if err != nil {
		return fmt.Errorf("runtime: recorded rotation: %w", err)
	}
	if tx.Bucket(bucketSessions) != nil {
		if err := tx.DeleteBucket(bucketSessions); err != nil {
			return err
		}
	}
	if err := pulse.Succeed(tx, old); err != nil {
		return err
	}
	if err := keepWakeMinute(tx, old); err != nil {
		return err
	}
	if err := b.Put(keyHandover, rot.Handover); err != nil {
		return err
	}
	if err := b.Delete(keyRotation); err != nil {
		return err
	}
	return b.Put(keyIdentity, []byte(rot.New))
}

func putRaw(tx *bolt.Tx, key, v []byte) error {
	b, err := tx.CreateBucketIfNotExists(bucketAgent)
	if err != nil {
		return err
	}
	return b.Put(key, v)
}

// keepWakeMinute records, at the first rotation, the wake minute and
// second of the identity rotated away (the agent's first), which restore
// then uses in place of the new DID's.
func keepWakeMinute(tx *bolt.Tx, old did.DID) error {
	c, err := loadCycle(tx)
	if err != nil || c.MinuteSet {
		return err
	}
	c.Minute, c.MinuteSet = wake.WakeMinute(old.String()), true
	if !c.SecondSet { // else the relay assigned it (adoptWakeSecond): it holds
		c.Second, c.SecondSet = wake.WakeSecond(old.String()), true
	}
	return putCBOR(tx, keyCycle, c)
}
