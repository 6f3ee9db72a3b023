package session

import (
	"bytes"
	"cmp"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// The last-resort KeyPackage (RFC 9420, Section 16.8: "An application MAY
// allow for reuse of a 'last resort' KeyPackage in order to prevent
// denial-of-service attacks"). Anyone can empty the relay's one-use pool
// between two wakes (GET /mls/key-package is rate-limited per caller, and
// callers are free to make up DIDs); the relay then hands out the
// last-resort KeyPackage to every initiator, without deleting it, until
// the device links again. Its private halves are therefore not deleted
// when a Welcome uses it: every Welcome to it joins. A Welcome delivered
// again is recognised as applied, as for the pool, and one for a group
// joined otherwise is refused (ErrGroupExists), so a replayed Welcome
// changes nothing.
//
// The device keeps one current last-resort KeyPackage and replaces it at
// the first refill after either
//
//   - half its lifetime passed (13.5 of mls.DefaultKeyPackageLifetime's 27
//     days): the relay serves it through a whole sleep and the device may
//     miss wakes, so it must have plenty of validity left whenever a sender
//     gets it, or senders refuse it; or
//   - a Welcome used it (LastResortMaxUses): each session started through it
//     shares its init key, and the key's private half is a forward-secrecy
//     liability for all of them until deleted. Replacing it at the next wake
//     bounds the sessions sharing one key to those started within one sleep,
//     exactly while the pool was empty, and costs one KeyPackage.
//
// A replaced one stays usable: its private halves are kept until the relay
// confirms it holds the successor (wire.Held.LastResort in its answer to
// the published state), and KeyPackageGrace from then on, as long as a
// Welcome to it may sit in the relay's queue; then it is pruned.
//
// LastResortMaxUses is how many Welcomes may use a last-resort KeyPackage
// before it is replaced at the next refill.
const LastResortMaxUses = 1

// lastResortEntry is a last-resort KeyPackage with its private keys.
type lastResortEntry struct {
	KeyPackage []byte `cbor:"kp"`   // MLSMessage-wrapped, as published
	InitPriv   []byte `cbor:"init"` // HPKE private key of init_key
	EncPriv    []byte `cbor:"enc"`  // HPKE private key of the leaf's encryption_key
	Seq        uint64 `cbor:"seq"`  // order of making: the highest unretired one is current
	Made       int64  `cbor:"made"` // Unix seconds
	NotAfter   int64  `cbor:"notAfter"`
	Uses       int    `cbor:"uses,omitempty"`      // groups joined with it
	Confirmed  bool   `cbor:"confirmed,omitempty"` // the relay said it holds it
	// RetiredAt is when the relay confirmed a successor (Unix seconds);
	// zero while it is current or its successor is unconfirmed.
	RetiredAt int64 `cbor:"retired,omitempty"`
}

// due reports whether e should be replaced at now.
func (e *lastResortEntry) due(now time.Time) bool {
	return e.Uses >= LastResortMaxUses || now.Unix() >= e.Made+(e.NotAfter-e.Made)/2
}

// lastResorts is the decoded last-resort bucket.
type lastResorts struct {
	b       *bolt.Bucket
	refs    [][]byte
	entries []lastResortEntry
	cur     int // index of the current entry, -1 for none
}

func loadLastResorts(b *bolt.Bucket) (*lastResorts, error) {
	l := &lastResorts{b: b, cur: -1}
	err := b.ForEach(func(k, v []byte) error {
		var e lastResortEntry
		if decMode.Unmarshal(v, &e) != nil {
			e = lastResortEntry{} // pruned: NotAfter 0 has long passed
		}
		l.refs = append(l.refs, bytes.Clone(k))
		l.entries = append(l.entries, e)
		if e.RetiredAt == 0 && e.KeyPackage != nil && (l.cur < 0 || e.Seq > l.entries[l.cur].Seq) {
			l.cur = len(l.entries) - 1
		}
		return nil
	})
	return l, err
}

func (l *lastResorts) put(i int) error {
	v, err := encMode.Marshal(&l.entries[i])
	if err != nil {
		return err
	}
	return store.Err(l.b.Put(l.refs[i], v))
}

// LastResort deletes the private halves of last-resort KeyPackages retired
// or expired more than Config.KeyPackageGrace ago, makes a new last-resort
// KeyPackage when there is none or the current one is due, and returns the
// current one MLSMessage-wrapped for the device to publish (wire.State.
// LastResort); nil when the relay confirmed it holds it (see
// LastResortHeld). wrote reports whether it changed anything in tx: most
// wakes change nothing, and a caller may then roll back and spare the
// device's flash an fsync. Given a read-only tx, it returns what a write
// transaction would when that would change nothing, and ErrWriteNeeded
// otherwise.
func (s *Sessions) LastResort(tx *bolt.Tx) (kp []byte, wrote bool, err error) {
	b, err := sub(tx, bucketLR)
	if err != nil || b == nil {
		return nil, false, cmp.Or(err, ErrWriteNeeded) // a read-only tx before the buckets exist
	}
	now := s.clock.Now()
	l, err := loadLastResorts(b)
	if err != nil {
		return nil, false, err
	}
	var dead [][]byte
	for i, e := range l.entries {
		if i != l.cur && ((e.RetiredAt != 0 && time.Unix(e.RetiredAt, 0).Add(s.grace()).Before(now)) ||
			time.Unix(e.NotAfter, 0).Add(s.grace()).Before(now)) {
			dead = append(dead, l.refs[i])
		}
	}
	due := l.cur < 0 || l.entries[l.cur].due(now)
	if (len(dead) > 0 || due) && !tx.Writable() {
		return nil, false, ErrWriteNeeded
	}
	if err := deleteAll(b, dead); err != nil {
		return nil, false, err
	}
	wrote = len(dead) > 0
	if !due {
		if e := l.entries[l.cur]; !e.Confirmed {
			return e.KeyPackage, wrote, nil
		}
		return nil, wrote, nil
	}
	kp, err = s.addLastResort(b, now)
	return kp, true, err
}

// addLastResort makes a new current last-resort KeyPackage and returns it.
func (s *Sessions) addLastResort(b *bolt.Bucket, now time.Time) ([]byte, error) {
	wire, kp, priv, err := NewKeyPackage(s.mlsConfig(), s.cfg.Key)
	if err != nil {
		return nil, err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return nil, store.Err(err)
	}
	e := lastResortEntry{KeyPackage: wire, InitPriv: priv.InitPriv, EncPriv: priv.EncryptionPriv, Seq: seq,
		Made: now.Unix(), NotAfter: int64(kp.LeafNode.Lifetime.NotAfter)}
	v, err := encMode.Marshal(&e)
	if err != nil {
		return nil, err
	}
	if err := b.Put(mls.KeyPackageRef(kp), v); err != nil {
		return nil, store.Err(err)
	}
	return wire, nil
}

// LastResortHeld records which last-resort KeyPackage the relay holds:
// digest is the wire.KeyPackageDigest its answer to the published state
// named (wire.Held.LastResort), nil for none. When it is the current one,
// that one is confirmed and every older one retired: its private halves
// are kept Config.KeyPackageGrace from now, for Welcomes to it still in the
// relay's queue. Otherwise the current one is marked unconfirmed, so that
// LastResort returns it to publish again. wrote reports whether it changed
// anything in tx (see LastResort).
func (s *Sessions) LastResortHeld(tx *bolt.Tx, digest []byte) (wrote bool, err error) {
	r, err := root(tx)
	if err != nil {
		return false, err
	}
	l, err := loadLastResorts(r.Bucket(bucketLR))
	if err != nil || l.cur < 0 {
		return false, err
	}
	cur := &l.entries[l.cur]
	held := bytes.Equal(wire.KeyPackageDigest(cur.KeyPackage), digest)
	if cur.Confirmed != held {
		cur.Confirmed, wrote = held, true
		if err := l.put(l.cur); err != nil {
			return false, err
		}
	}
	if !held {
		return wrote, nil
	}
	now := s.clock.Now().Unix()
	for i := range l.entries {
		if e := &l.entries[i]; i != l.cur && e.RetiredAt == 0 && e.KeyPackage != nil {
			e.RetiredAt, wrote = now, true
			if err := l.put(i); err != nil {
				return false, err
			}
		}
	}
	return wrote, nil
}

// findLastResort returns the last-resort KeyPackage among refs, current or
// kept, or ErrNoKeyPackage. A damaged entry is an error naming it.
func (s *Sessions) findLastResort(tx *bolt.Tx, refs [][]byte) (*pooled, error) {
	b, err := sub(tx, bucketLR)
	if err != nil {
		return nil, err
	}
	for _, ref := range refs {
		var v []byte
		if b != nil && len(ref) > 0 {
			v = b.Get(ref)
		}
		if v == nil {
			continue
		}
		var e lastResortEntry
		if err := decMode.Unmarshal(v, &e); err != nil {
			return nil, fmt.Errorf("session: last-resort key package %x is damaged: %w", ref, err)
		}
		p, err := s.pooledOf(ref, &poolEntry{KeyPackage: e.KeyPackage, InitPriv: e.InitPriv, EncPriv: e.EncPriv})
		if err != nil {
			return nil, fmt.Errorf("session: last-resort key package %x is damaged: %w", ref, err)
		}
		p.lastResort = true
		return p, nil
	}
	return nil, ErrNoKeyPackage
}

// useLastResort counts a join with a last-resort KeyPackage (in the Join's
// transaction), keeping its private halves, and remembers which group it
// joined, so that the same Welcome delivered again is recognised as
// applied (lastResortJoined).
func useLastResort(tx *bolt.Tx, ref, group []byte) error {
	r, err := root(tx)
	if err != nil {
		return err
	}
	b := r.Bucket(bucketLR)
	var e lastResortEntry
	if err := decMode.Unmarshal(b.Get(ref), &e); err != nil {
		return fmt.Errorf("session: last-resort key package %x is damaged: %w", ref, err)
	}
	e.Uses++
	v, err := encMode.Marshal(&e)
	if err != nil {
		return err
	}
	if err := b.Put(ref, v); err != nil {
		return store.Err(err)
	}
	return store.Err(r.Bucket(bucketUsed).Put(usedLastResortKey(ref, group), group))
}

// usedLastResortKey is the kp-used key of a join with a last-resort
// KeyPackage: one per group, where a pool KeyPackage has one for its only
// group.
func usedLastResortKey(ref, group []byte) []byte {
	return append(append([]byte("lr:"), ref...), group...)
}

// lastResortJoined reports whether the last-resort KeyPackage ref joined
// group, which still exists.
func lastResortJoined(tx *bolt.Tx, ref, group []byte) (bool, error) {
	used, err := sub(tx, bucketUsed)
	if err != nil || used == nil || used.Get(usedLastResortKey(ref, group)) == nil {
		return false, err
	}
	return exists(tx, group)
}

// LastResortCount returns how many last-resort KeyPackages the device
// keeps (the current one, and replaced ones kept for their grace) and how
// many groups the current one joined.
func (s *Sessions) LastResortCount(tx *bolt.Tx) (kept, uses int, err error) {
	b, err := sub(tx, bucketLR)
	if err != nil || b == nil {
		return 0, 0, err
	}
	l, err := loadLastResorts(b)
	if err != nil {
		return 0, 0, err
	}
	if l.cur >= 0 {
		uses = l.entries[l.cur].Uses
	}
	return len(l.entries), uses, nil
}
