package session

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdh"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// The KeyPackage pool of an agent that sleeps (draft Section 6.1; RFC
// 9420, Sections 10 and 16.8). The relay hands out the public halves one at
// a time while the device sleeps; the private halves stay on the device in
// bbolt, one entry per KeyPackage, keyed by KeyPackageRef, so that a
// Welcome arriving days later, after reboots, still finds its KeyPackage.
// The entry a Welcome consumes is deleted in the transaction that stores
// the new group (Join), so a KeyPackage is never used twice and never lost
// half-used.
//
// The relay names, in its answer to each published state, the KeyPackages
// it still holds (wire.Held). One the device published that is not among
// them was handed out to an initiator, who may never send its Welcome
// (or who fetched it only to empty the pool): it no longer counts toward
// the pool, so the next Refill makes a new one, and its private halves
// are kept KeyPackageGrace (the relay's queue TTL) from when the device
// learnt it was taken, long enough for any Welcome to it to arrive.

// poolEntry is a KeyPackage with its private keys (the signature key is the
// agent's own).
type poolEntry struct {
	KeyPackage []byte `cbor:"kp"`   // MLSMessage-wrapped, as published
	InitPriv   []byte `cbor:"init"` // HPKE private key of init_key
	EncPriv    []byte `cbor:"enc"`  // HPKE private key of the leaf's encryption_key
	NotAfter   int64  `cbor:"notAfter"`
	Published  bool   `cbor:"pub,omitempty"`
	// TakenAt is when the device learnt that the relay handed it out
	// (Unix seconds); zero while the relay holds it or it is unpublished.
	TakenAt int64 `cbor:"taken,omitempty"`
}

// counts reports whether e still counts toward the pool at now: unexpired
// and not handed out.
func (e *poolEntry) counts(now time.Time) bool { return e.NotAfter > now.Unix() && e.TakenAt == 0 }

// Refill deletes the private halves of KeyPackages whose lifetime ended,
// or that the relay handed out, more than Config.KeyPackageGrace ago,
// generates KeyPackages until target unexpired ones not handed out exist (target <= 0 means Config.PoolSize), and returns the
// MLSMessage-wrapped public halves of those not yet marked Published: what
// the device uploads to its relay at each wake.
func (s *Sessions) Refill(tx *bolt.Tx, target int) ([][]byte, error) {
	kps, _, err := s.RefillChanged(context.Background(), tx, target)
	return kps, err
}

// RefillContext is Refill that stops making KeyPackages when ctx ends (a
// SIGTERM while a large pool is made), returning ctx's error: the caller's
// transaction must then roll back. A target above MaxPoolSize is an error.
func (s *Sessions) RefillContext(ctx context.Context, tx *bolt.Tx, target int) ([][]byte, error) {
	kps, _, err := s.RefillChanged(ctx, tx, target)
	return kps, err
}

// RefillChanged is RefillContext, and reports whether it wrote to tx
// (deleted or generated a KeyPackage), so that a caller can leave a
// transaction that changed nothing uncommitted: the pool is full at most
// wakes, and a commit costs an fsync. Given a read-only tx, it returns
// what a write transaction would when that would change nothing, and
// ErrWriteNeeded otherwise: a caller may ask a read transaction first and
// open a write transaction only when it is needed.
func (s *Sessions) RefillChanged(ctx context.Context, tx *bolt.Tx, target int) ([][]byte, bool, error) {
	if target <= 0 {
		target = s.poolSize()
	}
	if target > MaxPoolSize {
		return nil, false, fmt.Errorf("session: KeyPackage pool of %d, want at most %d (the relay keeps no more)", target, MaxPoolSize)
	}
	pool, err := sub(tx, bucketKP)
	if err != nil || pool == nil {
		return nil, false, cmp.Or(err, ErrWriteNeeded) // a read-only tx before the buckets exist
	}
	used, usedGone, err := deadUsed(tx)
	if err != nil {
		return nil, false, err
	}
	sc, err := s.scan(pool, s.clock.Now(), MaxTakenFactor*target)
	if err != nil {
		return nil, false, err
	}
	changed := len(usedGone)+len(sc.dead) > 0 || sc.live < target
	if !changed {
		return sc.unpublished, false, nil
	}
	if !tx.Writable() {
		return nil, false, ErrWriteNeeded
	}
	if err := deleteAll(used, usedGone); err != nil {
		return nil, false, err
	}
	if err := deleteAll(pool, sc.dead); err != nil {
		return nil, false, err
	}
	out := sc.unpublished
	for live := sc.live; live < target; live++ {
		if err := ctx.Err(); err != nil {
			return nil, false, fmt.Errorf("session: making KeyPackages: %w", err)
		}
		kp, err := s.addKeyPackage(pool)
		if err != nil {
			return nil, false, err
		}
		out = append(out, kp)
	}
	return out, true, nil
}

// MaxTakenFactor bounds the handed-out KeyPackages whose private halves
// the pool keeps for their grace: at most this many times the pool's
// target, the most recently taken. A caller who empties the relay's pool
// at every window (GET /mls/key-package needs no identity the caller
// cannot make up) so costs the device a bounded amount of flash; a
// Welcome to a KeyPackage dropped for this finds none.
const MaxTakenFactor = 8

// poolScan is what one pass over the pool found.
type poolScan struct {
	live        int      // entries that count toward the pool
	dead        [][]byte // keys of the entries to delete
	unpublished [][]byte // public halves of the live entries not yet published
}

// scan reads the pool once: the entries that count toward it, those not
// published yet among them, and the keys of the entries to delete
// (undecodable ones, those expired or handed out more than the grace ago,
// and the oldest handed-out ones beyond maxTaken).
func (s *Sessions) scan(pool *bolt.Bucket, now time.Time, maxTaken int) (poolScan, error) {
	type taken struct {
		ref []byte
		at  int64
	}
	var sc poolScan
	var out []taken
	err := pool.ForEach(func(k, v []byte) error {
		var e poolEntry
		switch err := decMode.Unmarshal(v, &e); {
		case err != nil, time.Unix(e.NotAfter, 0).Add(s.grace()).Before(now),
			e.TakenAt != 0 && time.Unix(e.TakenAt, 0).Add(s.grace()).Before(now):
			sc.dead = append(sc.dead, bytes.Clone(k))
		case e.TakenAt != 0:
			out = append(out, taken{bytes.Clone(k), e.TakenAt})
		case e.counts(now):
			sc.live++
			if !e.Published {
				sc.unpublished = append(sc.unpublished, e.KeyPackage)
			}
		}
		return nil
	})
	if err != nil {
		return poolScan{}, err
	}
	if len(out) > maxTaken {
		slices.SortStableFunc(out, func(a, b taken) int { return cmp.Compare(b.at, a.at) }) // newest first
		for _, t := range out[maxTaken:] {
			sc.dead = append(sc.dead, t.ref)
		}
	}
	return sc, nil
}

// deleteAll deletes keys from b.
func deleteAll(b *bolt.Bucket, keys [][]byte) error {
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return store.Err(err)
		}
	}
	return nil
}

// addKeyPackage generates one KeyPackage for the agent's credential,
// stores it with its private keys and returns its public half,
// MLSMessage-wrapped.
func (s *Sessions) addKeyPackage(pool *bolt.Bucket) ([]byte, error) {
	wire, kp, priv, err := NewKeyPackage(s.mlsConfig(), s.cfg.Key)
	if err != nil {
		return nil, err
	}
	e := poolEntry{KeyPackage: wire, InitPriv: priv.InitPriv, EncPriv: priv.EncryptionPriv, NotAfter: int64(kp.LeafNode.Lifetime.NotAfter)}
	v, err := encMode.Marshal(&e)
	if err != nil {
		return nil, err
	}
	return wire, store.Err(pool.Put(mls.KeyPackageRef(kp), v))
}

// Published marks KeyPackages (as Refill returned them) as uploaded, so
// later refills do not return them again. With held, the digests
// (wire.KeyPackageDigest) of the KeyPackages the relay holds after that
// upload, every published KeyPackage not among them is marked handed out;
// a nil held (the relay did not say) marks none. It returns how many were
// newly found handed out: that many new ones are wanted.
func (s *Sessions) Published(tx *bolt.Tx, kps [][]byte, held [][]byte) (int, error) {
	r, err := root(tx)
	if err != nil {
		return 0, err
	}
	pool := r.Bucket(bucketKP)
	if err := markPublished(pool, kps); err != nil {
		return 0, err
	}
	if held == nil {
		return 0, nil
	}
	return markTaken(pool, held, s.clock.Now().Unix())
}

// putPoolEntry stores e under ref in the pool.
func putPoolEntry(pool *bolt.Bucket, ref []byte, e *poolEntry) error {
	v, err := encMode.Marshal(e)
	if err != nil {
		return err
	}
	return store.Err(pool.Put(ref, v))
}

// markPublished marks the pool entries of kps published; those no longer
// in the pool (consumed or pruned meanwhile) are skipped.
func markPublished(pool *bolt.Bucket, kps [][]byte) error {
	for _, wire := range kps {
		kp, err := ParseKeyPackage(wire)
		if err != nil {
			return err
		}
		ref := mls.KeyPackageRef(kp)
		v := pool.Get(ref)
		if v == nil {
			continue // consumed or pruned meanwhile
		}
		var e poolEntry
		if err := decMode.Unmarshal(v, &e); err != nil {
			continue
		}
		e.Published = true
		if err := putPoolEntry(pool, ref, &e); err != nil {
			return err
		}
	}
	return nil
}

// markTaken marks every published entry whose digest is not in held as
// handed out at now, and returns how many it marked.
func markTaken(pool *bolt.Bucket, held [][]byte, now int64) (int, error) {
	at := make(map[string]bool, len(held))
	for _, d := range held {
		at[string(d)] = true
	}
	type taken struct {
		ref []byte
		e   poolEntry
	}
	var out []taken
	err := pool.ForEach(func(k, v []byte) error {
		var e poolEntry
		if decMode.Unmarshal(v, &e) != nil || !e.Published || e.TakenAt != 0 || at[string(wire.KeyPackageDigest(e.KeyPackage))] {
			return nil
		}
		out = append(out, taken{bytes.Clone(k), e})
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, t := range out {
		t.e.TakenAt = now
		if err := putPoolEntry(pool, t.ref, &t.e); err != nil {
			return 0, err
		}
	}
	return len(out), nil
}

// PoolSize returns how many KeyPackages the pool holds, how many of them
// are published, and how many of those the relay handed out, counting
// expired ones still kept for their grace.
func (s *Sessions) PoolSize(tx *bolt.Tx) (total, published, taken int, err error) {
	pool, err := sub(tx, bucketKP)
	if err != nil || pool == nil {
		return 0, 0, 0, err
	}
	err = pool.ForEach(func(k, v []byte) error {
		total++
		var e poolEntry
		if decMode.Unmarshal(v, &e) == nil && e.Published {
			published++
			if e.TakenAt != 0 {
				taken++
			}
		}
		return nil
	})
	return total, published, taken, err
}

// pooled is a KeyPackage of the pool, or a last-resort one, ready for a
// Join.
type pooled struct {
	ref        []byte
	kp         *mls.KeyPackage
	priv       *mls.KeyPackagePrivate
	lastResort bool // kept after the Join (lastresort.go)
}

// findKeyPackage returns the pool entry for the first of refs the pool
// holds, else the last-resort KeyPackage among refs, or ErrNoKeyPackage.
// A damaged entry is an error naming it.
func (s *Sessions) findKeyPackage(tx *bolt.Tx, refs [][]byte) (*pooled, error) {
	pool, err := sub(tx, bucketKP)
	if err != nil {
		return nil, err
	}
	for _, ref := range refs {
		var v []byte
		if pool != nil && len(ref) > 0 {
			v = pool.Get(ref)
		}
		if v == nil {
			continue
		}
		p, err := s.decodeEntry(ref, v)
		if err != nil {
			return nil, fmt.Errorf("session: key package %x in the pool is damaged: %w", ref, err)
		}
		return p, nil
	}
	return s.findLastResort(tx, refs)
}

// decodeEntry decodes a pool entry and checks that its private keys match
// its KeyPackage.
func (s *Sessions) decodeEntry(ref, v []byte) (*pooled, error) {
	var e poolEntry
	if err := decMode.Unmarshal(v, &e); err != nil {
		return nil, err
	}
	return s.pooledOf(ref, &e)
}

// pooledOf checks that e's private keys match its KeyPackage, stored
// under ref.
func (s *Sessions) pooledOf(ref []byte, e *poolEntry) (*pooled, error) {
	kp, err := ParseKeyPackage(e.KeyPackage)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(mls.KeyPackageRef(kp), ref) {
		return nil, fmt.Errorf("stored under another reference")
	}
	if !x25519Matches(e.InitPriv, kp.InitKey) || !x25519Matches(e.EncPriv, kp.LeafNode.EncryptionKey) {
		return nil, fmt.Errorf("private keys do not match the key package")
	}
	return &pooled{ref: bytes.Clone(ref), kp: kp, priv: &mls.KeyPackagePrivate{
		InitPriv: e.InitPriv, EncryptionPriv: e.EncPriv, SignaturePriv: s.cfg.Key.Ed25519(),
	}}, nil
}

// x25519Matches reports whether priv is the X25519 private key of pub.
func x25519Matches(priv, pub []byte) bool {
	k, err := ecdh.X25519().NewPrivateKey(priv)
	return err == nil && bytes.Equal(k.PublicKey().Bytes(), pub)
}

// consume deletes a pool entry (in the Join's transaction) and remembers,
// without any secret, which group it joined: the drain delivers a record
// again after a crash between its commit and its acknowledgement, and a
// Welcome seen twice is then recognised as applied (see joinedWith).
func consume(tx *bolt.Tx, ref, group []byte) error {
	r, err := root(tx)
	if err != nil {
		return err
	}
	if err := r.Bucket(bucketKP).Delete(ref); err != nil {
		return store.Err(err)
	}
	return store.Err(r.Bucket(bucketUsed).Put(ref, group))
}

// joinedWith returns the group a consumed KeyPackage among refs joined, if
// that group still exists.
func joinedWith(tx *bolt.Tx, refs [][]byte) ([]byte, bool, error) {
	used, err := sub(tx, bucketUsed)
	if err != nil || used == nil {
		return nil, false, err
	}
	for _, ref := range refs {
		if g := used.Get(ref); g != nil && len(ref) > 0 {
			ok, err := exists(tx, g)
			return bytes.Clone(g), ok, err
		}
	}
	return nil, false, nil
}

// deadUsed returns the bucket of the consumed KeyPackages and the keys of
// those whose group is gone: Refill forgets them.
func deadUsed(tx *bolt.Tx) (*bolt.Bucket, [][]byte, error) {
	used, err := sub(tx, bucketUsed)
	if err != nil || used == nil {
		return nil, nil, err
	}
	var dead [][]byte
	err = used.ForEach(func(k, v []byte) error {
		ok, err := exists(tx, v)
		if err == nil && !ok {
			dead = append(dead, bytes.Clone(k))
		}
		return err
	})
	return used, dead, err
}
