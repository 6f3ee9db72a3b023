package session

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
)

// mutation changes one stored value; nil deletes it.
type mutation struct {
	name string
	f    func(v []byte) []byte
}

func flip(i func(n int) int) func([]byte) []byte {
	return func(v []byte) []byte {
		v = bytes.Clone(v)
		if len(v) > 0 {
			v[i(len(v))] ^= 0x20
		}
		return v
	}
}

var mutations = []mutation{
	{"first byte flipped", flip(func(int) int { return 0 })},
	{"middle byte flipped", flip(func(n int) int { return n / 2 })},
	{"last byte flipped", flip(func(n int) int { return n - 1 })},
	{"truncated by one", func(v []byte) []byte { return v[:len(v)-1] }},
	{"truncated to half", func(v []byte) []byte { return v[:len(v)/2] }},
	{"emptied", func([]byte) []byte { return []byte{} }},
	{"one byte appended", func(v []byte) []byte { return append(bytes.Clone(v), 0) }},
	{"deleted", nil},
}

// corrupt applies m to field of the group's stored state; with resum the
// checksum is recomputed, so that only the decoders stand between the
// damage and a restored group.
func corrupt(t testing.TB, a *agent, group []byte, field []byte, m mutation, resum bool) {
	t.Helper()
	a.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRoot).Bucket(bucketGroups).Bucket(groupKey(group))
		if m.f == nil {
			if err := b.Delete(field); err != nil {
				return err
			}
		} else if err := b.Put(field, m.f(b.Get(field))); err != nil {
			return err
		}
		if resum {
			return b.Put(keySum, checksum(b.Get(keyMeta), b.Get(keyTree), b.Get(keySecrets)))
		}
		return nil
	})
}

// TestCorruptStateFailsClosed corrupts and truncates each stored field of a
// pair session in turn: every operation then fails with a *CorruptError,
// the session is dropped (group and pair index), and a new pair session
// can be established (draft Section 6.4).
func TestCorruptStateFailsClosed(t *testing.T) {
	fields := [][]byte{keyMeta, keyTree, keySecrets, keySum}
	for _, field := range fields {
		for _, m := range mutations {
			t.Run(fmt.Sprintf("%s %s", field, m.name), func(t *testing.T) {
				alice, bob := newAgent(t, "alice", nil), newAgent(t, "bob", nil)
				group := pair(t, alice, bob)
				send(t, alice, bob, group, []byte("before"))
				var wire []byte
				alice.update(func(tx *bolt.Tx) (err error) { wire, err = alice.s.Encrypt(tx, group, []byte("next")); return err })
				corrupt(t, bob, group, field, m, false)
				bob.reopen()
				checkDropped(t, bob, group, alice.id(), func(tx *bolt.Tx) error {
					_, err := bob.s.Process(tx, wire, did.DID{})
					return err
				})
				// Re-established, the pair works again.
				g2 := pair(t, alice, bob)
				if r := send(t, alice, bob, g2, []byte("again")); string(r.Plaintext) != "again" {
					t.Errorf("after re-establishing: %q", r.Plaintext)
				}
			})
		}
	}
}

// checkDropped runs op on a corrupt group and checks that it failed closed.
func checkDropped(t *testing.T, a *agent, group []byte, peer did.DID, op func(tx *bolt.Tx) error) {
	t.Helper()
	// A read-only look fails the same way and changes nothing.
	err := a.db.View(func(tx *bolt.Tx) error { _, err := a.s.Info(tx, group); return err })
	var ce *CorruptError
	if !errors.As(err, &ce) || errors.Is(err, ErrDropped) {
		t.Fatalf("Info in a read-only transaction = %v, want a *CorruptError, not dropped", err)
	}
	err = a.try(op)
	if !errors.As(err, &ce) || !errors.Is(err, ErrDropped) {
		t.Fatalf("operation on a corrupt group = %v, want a *CorruptError matching ErrDropped", err)
	}
	if !bytes.Equal(ce.Group, group) || !strings.Contains(err.Error(), "re-establish") {
		t.Errorf("error %q does not name the group or say what to do", err)
	}
	t.Logf("%v", err)
	a.update(func(tx *bolt.Tx) error {
		if ok, _ := a.s.Has(tx, group); ok {
			t.Error("the corrupt group is still stored")
		}
		if _, err := a.s.PairGroup(tx, peer); !errors.Is(err, ErrNoSession) {
			t.Errorf("PairGroup after the drop = %v, want ErrNoSession", err)
		}
		return nil
	})
	if err := a.try(op); !errors.Is(err, ErrNoSession) {
		t.Errorf("operation after the drop = %v, want ErrNoSession", err)
	}
}

// TestDecodersAreStrict recomputes the checksum after each structural
// damage, so that the decoders alone must refuse the state.
func TestDecodersAreStrict(t *testing.T) {
	structural := []mutation{mutations[3], mutations[4], mutations[5], mutations[6], mutations[7],
		{"version byte", flip(func(int) int { return 0 })}}
	alice, bob := newAgent(t, "alice", nil), newAgent(t, "bob", nil)
	for _, field := range [][]byte{keyMeta, keyTree, keySecrets} {
		for _, m := range structural {
			t.Run(fmt.Sprintf("%s %s", field, m.name), func(t *testing.T) {
				group := pair(t, alice, bob)
				corrupt(t, bob, group, field, m, true)
				checkDropped(t, bob, group, alice.id(), func(tx *bolt.Tx) error {
					_, err := bob.s.Encrypt(tx, group, []byte("x"))
					return err
				})
			})
		}
	}
}

// TestStateMovedToAnotherAgent: a group copied into another agent's store
// is refused (its meta names its owner).
func TestStateOfAnotherAgent(t *testing.T) {
	alice, bob := newAgent(t, "alice", nil), newAgent(t, "bob", nil)
	group := pair(t, alice, bob)
	bob.cfg.Key = alice.key
	bob.reopen()
	err := bob.try(func(tx *bolt.Tx) error { _, err := bob.s.Info(tx, group); return err })
	if !errors.Is(err, ErrDropped) || !strings.Contains(err.Error(), bob.id().String()) {
		t.Fatalf("Info = %v, want ErrDropped naming the owner", err)
	}
}
