package mls

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/torpor-dev/torpor/mls/internal/secrettree"
)

// compareGroups compares every field of two groups except the config
// (which holds functions and is not part of the state).
func compareGroups(t testing.TB, want, got *Group) {
	t.Helper()
	opts := cmp.Options{
		cmp.Exporter(func(reflect.Type) bool { return true }),
		cmpopts.IgnoreFields(Group{}, "config"),
		cmpopts.IgnoreFields(Protector{}, "Rand"),
		cmpopts.IgnoreFields(RatchetTree{}, "hashes"),     // a cache
		cmpopts.IgnoreFields(secrettree.Tree{}, "Window"), // configuration
		cmpopts.EquateEmpty(),
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("restored group differs (-want +got):\n%s", diff)
	}
}

func TestStateRoundTrip(t *testing.T) {
	for i, j := range loadPassiveJoins(t, "passive-client-welcome.cs1.json") {
		alice, bob := j.join(t), j.join(t)
		// Move bob's ratchet for alice's leaf out of order so the state
		// holds skipped keys, and alice's sending ratchet forward.
		var msgs []*MLSMessage
		for k := 0; k < 4; k++ {
			m, err := alice.EncryptApplication([]byte{byte(k)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, m)
		}
		if _, err := bob.DecryptApplication(msgs[2]); err != nil {
			t.Fatal(err)
		}
		for _, g := range []*Group{alice, bob} {
			st, err := g.State()
			if err != nil {
				t.Fatal(err)
			}
			restored, err := RestoreGroup(j.cfg, st)
			if err != nil {
				t.Fatalf("case %d: RestoreGroup: %v", i, err)
			}
			compareGroups(t, g, restored)
			again, err := restored.State()
			if err != nil || !bytes.Equal(again.Secrets, st.Secrets) || !bytes.Equal(again.Tree, st.Tree) {
				t.Errorf("case %d: state of the restored group differs (%v)", i, err)
			}
		}
		// The restored receiver still has the skipped keys and refuses the
		// replay; the restored sender continues its ratchet.
		st, _ := bob.State()
		bob2, err := RestoreGroup(j.cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{0, 1, 3} {
			if am, err := bob2.DecryptApplication(msgs[k]); err != nil || am.Data[0] != byte(k) {
				t.Errorf("case %d: restored receiver, message %d: %v", i, k, err)
			}
		}
		if _, err := bob2.DecryptApplication(msgs[2]); !errors.Is(err, ErrGenerationUsed) {
			t.Errorf("case %d: restored receiver accepted a replay: %v", i, err)
		}
		st, _ = alice.State()
		alice2, _ := RestoreGroup(j.cfg, st)
		m, err := alice2.EncryptApplication([]byte("after restore"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if am, err := bob2.DecryptApplication(m); err != nil || string(am.Data) != "after restore" {
			t.Errorf("case %d: message from the restored sender: %v", i, err)
		}
	}
}

func TestRestoreRejects(t *testing.T) {
	joins := loadPassiveJoins(t, "passive-client-welcome.cs1.json")
	g := joins[0].join(t)
	st, err := g.State()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := joins[4].join(t).State()
	for n := 0; n < len(st.Secrets); n++ {
		if _, err := RestoreGroup(nil, &State{Tree: st.Tree, Secrets: st.Secrets[:n]}); !errors.Is(err, ErrMalformed) {
			t.Fatalf("RestoreGroup with %d of %d secret bytes = %v, want ErrMalformed", n, len(st.Secrets), err)
		}
	}
	tests := []struct {
		name string
		st   *State
		want error
	}{
		{"trailing byte", &State{Tree: st.Tree, Secrets: append(bytes.Clone(st.Secrets), 0)}, ErrMalformed},
		{"other version", &State{Tree: st.Tree, Secrets: append([]byte{9}, st.Secrets[1:]...)}, ErrMalformed},
		{"tree of another group", &State{Tree: other.Tree, Secrets: st.Secrets}, ErrInvalidTree},
		{"malformed tree", &State{Tree: st.Tree[:10], Secrets: st.Secrets}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := RestoreGroup(nil, tt.st); !errors.Is(err, tt.want) {
				t.Errorf("RestoreGroup = %v, want %v", err, tt.want)
			}
		})
	}
	g.err = errors.New("boom")
	if _, err := g.State(); err == nil {
		t.Error("State saved a group with a sticky error")
	}
}

// restore saves and restores c's group, checks the copy is identical, and
// replaces c's group with it.
func restore(t testing.TB, c *client) {
	t.Helper()
	st, err := c.g.State()
	if err != nil {
		t.Fatalf("%s: State: %v", c.name, err)
	}
	g, err := RestoreGroup(c.cfg, st)
	if err != nil {
		t.Fatalf("%s: RestoreGroup: %v", c.name, err)
	}
	compareGroups(t, c.g, g)
	again, err := g.State()
	if err != nil || !bytes.Equal(again.Secrets, st.Secrets) || !bytes.Equal(again.Tree, st.Tree) {
		t.Fatalf("%s: the restored group saves other bytes (%v)", c.name, err)
	}
	c.g = g
}

// TestStateMidEpoch saves and restores every member in the middle of an
// epoch (proposals cached, an Update of our own pending, resumption PSKs of
// past epochs) and checks that the restored groups carry on.
func TestStateMidEpoch(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob", "carol", "dave")
	alice, bob, carol, dave := cs[0], cs[1], cs[2], cs[3]
	for i := 0; i < 3; i++ {
		pc := cs[i].commit(t, &CommitOptions{ForcePath: true})
		process(t, pc.Message, append(cs[:i:i], cs[i+1:]...)...)
	}
	upd, err := carol.g.ProposeUpdate(nil)
	if err != nil {
		t.Fatal(err)
	}
	process(t, upd, alice, bob, dave)
	rm, err := bob.g.Propose(&RemoveProposal{Removed: dave.g.LeafIndex()}, &SendOptions{Public: true})
	if err != nil {
		t.Fatal(err)
	}
	process(t, rm, alice, carol, dave)
	if len(carol.g.pendingUpdate) == 0 || len(alice.g.proposals) != 2 || len(alice.g.resumption) < 3 {
		t.Fatalf("test setup: pending update %d, proposals %d, resumption %d",
			len(carol.g.pendingUpdate), len(alice.g.proposals), len(alice.g.resumption))
	}
	for _, c := range cs {
		restore(t, c)
	}
	pc := alice.commit(t, nil)
	res := process(t, pc.Message, bob, carol, dave)
	if !res[2].Commit.Removed {
		t.Fatal("Dave was not removed")
	}
	sameState(t, alice, bob, carol)
	checkMessaging(t, alice, bob, carol)
	// A removed member's state round-trips too, and stays unusable.
	restore(t, dave)
	if _, err := dave.g.EncryptApplication([]byte("x"), nil); !errors.Is(err, ErrNotMember) {
		t.Errorf("restored removed member: %v, want ErrNotMember", err)
	}
}

// FuzzRestoreGroup feeds mutated states to RestoreGroup: it must never
// panic, and a state it accepts must save to the same bytes.
func FuzzRestoreGroup(f *testing.F) {
	j := loadPassiveJoins(f, "passive-client-welcome.cs1.json")[0]
	st, err := j.join(f).State()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(st.Tree, st.Secrets)
	f.Fuzz(func(t *testing.T, tree, secrets []byte) {
		g, err := RestoreGroup(nil, &State{Tree: tree, Secrets: secrets})
		if err != nil {
			return
		}
		again, err := g.State()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Secrets, secrets) {
			t.Fatalf("accepted secrets re-encode differently")
		}
	})
}

// TestMemberCredential: MemberCredential gives the credential and
// signature key Member gives, as copies, and false for a leaf without a
// member.
func TestMemberCredential(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob", "carol")
	g := cs[1].g
	for _, l := range g.Members() {
		c, key, ok := g.MemberCredential(l)
		m := g.Member(l)
		if !ok || !cmp.Equal(c, m.Credential, cmpopts.EquateEmpty()) || !bytes.Equal(key, m.SignatureKey) {
			t.Errorf("MemberCredential(%d) = %+v, %x, %v; Member gives %+v, %x", l, c, key, ok, m.Credential, m.SignatureKey)
		}
		c.Identity[0] ^= 1
		key[0] ^= 1
		if m2 := g.Member(l); !bytes.Equal(m2.Credential.Identity, m.Credential.Identity) || !bytes.Equal(m2.SignatureKey, m.SignatureKey) {
			t.Errorf("changing what MemberCredential(%d) returned changed the group", l)
		}
	}
	for _, l := range []uint32{3, 7} { // a blank leaf, a leaf beyond the tree
		if _, _, ok := g.MemberCredential(l); ok {
			t.Errorf("MemberCredential(%d) found a member", l)
		}
	}
}
