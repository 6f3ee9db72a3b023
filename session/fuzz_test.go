package session

import (
	"bytes"
	"encoding/json"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
)

// FuzzStoredState feeds arbitrary stored fields to the loader: it must
// either restore a group or fail closed with a *CorruptError, never panic
// or half-restore. Seeds are a real pair session's fields.
func FuzzStoredState(f *testing.F) {
	alice, bob := newAgent(f, "alice", nil), newAgent(f, "bob", nil)
	group := pair(f, alice, bob)
	var meta, tree, secrets []byte
	bob.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRoot).Bucket(bucketGroups).Bucket(groupKey(group))
		meta, tree, secrets = bytes.Clone(b.Get(keyMeta)), bytes.Clone(b.Get(keyTree)), bytes.Clone(b.Get(keySecrets))
		return nil
	})
	f.Add(meta, tree, secrets, true)
	f.Add(meta, tree, secrets[:len(secrets)/2], true)
	f.Add(meta[:3], tree, secrets, false)
	f.Fuzz(func(t *testing.T, meta, tree, secrets []byte, resum bool) {
		bob.t = t // the helpers report to the running input
		err := bob.try(func(tx *bolt.Tx) error {
			b, err := tx.Bucket(bucketRoot).Bucket(bucketGroups).CreateBucketIfNotExists(groupKey(group))
			if err != nil {
				return err
			}
			sum := []byte("not a checksum")
			if resum {
				sum = checksum(meta, tree, secrets)
			}
			for k, v := range map[string][]byte{"meta": meta, "tree": tree, "secrets": secrets, "sum": sum} {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
			st, err := bob.s.load(tx, group)
			if err == nil && st.g.Epoch() != st.meta.Epoch {
				t.Fatalf("restored epoch %d, meta says %d", st.g.Epoch(), st.meta.Epoch)
			}
			return err
		})
		var ce *CorruptError
		if err != nil && !asCorrupt(err, &ce) {
			t.Fatalf("load = %v, want success or a *CorruptError", err)
		}
	})
}

func asCorrupt(err error, ce **CorruptError) bool {
	c, ok := err.(*CorruptError)
	*ce = c
	return ok
}

// FuzzObjectOf checks that ObjectOf never panics and that what it returns
// is a JSON object which Plaintext wraps back into a plaintext it reads
// identically.
func FuzzObjectOf(f *testing.F) {
	pt, _ := Plaintext(testObject(1))
	f.Add(pt)
	f.Add([]byte(`{"object":{"a":1}}`))
	f.Add([]byte(`{"mediaType":"x","object":{}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		obj, err := ObjectOf(in)
		if err != nil {
			return
		}
		if !json.Valid(obj) || !isJSONObject(obj) {
			t.Fatalf("ObjectOf(%q) = %q, not a JSON object", in, obj)
		}
		again, err := Plaintext(obj)
		if err != nil {
			t.Fatal(err)
		}
		obj2, err := ObjectOf(again)
		if err != nil || !bytes.Equal(obj, obj2) {
			t.Fatalf("round trip: %q, %v", obj2, err)
		}
	})
}

// FuzzProcess feeds arbitrary messages to a member of a pair session: it
// must never panic, and a message it refuses must change nothing.
func FuzzProcess(f *testing.F) {
	alice, bob := newAgent(f, "alice", nil), newAgent(f, "bob", nil)
	group := pair(f, alice, bob)
	var m []byte
	alice.update(func(tx *bolt.Tx) (err error) { m, err = alice.s.Encrypt(tx, group, []byte("seed")); return err })
	f.Add(m)
	var c *Committed
	alice.update(func(tx *bolt.Tx) (err error) {
		c, err = alice.s.Commit(tx, group, Change{Update: true, Public: true})
		return err
	})
	f.Add(c.Commit)
	f.Fuzz(func(t *testing.T, msg []byte) {
		bob.t = t
		before := bob.snapshot()
		err := bob.try(func(tx *bolt.Tx) error { _, err := bob.s.Process(tx, msg, did.DID{}); return err })
		if err != nil && !mapsEqual(before, bob.snapshot()) {
			t.Fatalf("a refused message (%v) changed the state", err)
		}
	})
}
