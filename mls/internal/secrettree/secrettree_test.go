package secrettree

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/mls/internal/treemath"

	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

func loadVectors(t testing.TB) []vectorfmt.SecretTree {
	t.Helper()
	vs, err := vectorfmt.Load[vectorfmt.SecretTree]("../../testdata/secret-tree.cs1.json")
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestVector checks keys and nonces against secret-tree.cs1.json, once
// through lookups and once through a receiver consuming in order.
func TestVector(t *testing.T) {
	for i, v := range loadVectors(t) {
		key, nonce := SenderDataKeyNonce(v.SenderData.SenderDataSecret, v.SenderData.Ciphertext)
		if !bytes.Equal(key, v.SenderData.Key) || !bytes.Equal(nonce, v.SenderData.Nonce) {
			t.Errorf("case %d: sender data key/nonce = %x/%x, want %x/%x", i, key, nonce, v.SenderData.Key, v.SenderData.Nonce)
		}
		lookup, err := New(v.EncryptionSecret, uint32(len(v.Leaves)))
		if err != nil {
			t.Fatal(err)
		}
		consume, _ := New(v.EncryptionSecret, uint32(len(v.Leaves)))
		for l, gens := range v.Leaves {
			leaf := treemath.LeafIndex(l)
			for _, g := range gens {
				for _, tr := range []*Tree{lookup, consume} {
					h, err := tr.Key(leaf, Handshake, g.Generation)
					if err != nil {
						t.Fatalf("case %d leaf %d gen %d: %v", i, l, g.Generation, err)
					}
					a, err := tr.Key(leaf, Application, g.Generation)
					if err != nil {
						t.Fatal(err)
					}
					want := [][]byte{g.HandshakeKey, g.HandshakeNonce, g.ApplicationKey, g.ApplicationNonce}
					if diff := cmp.Diff(want, [][]byte{h.Key, h.Nonce, a.Key, a.Nonce}); diff != "" {
						t.Errorf("case %d leaf %d gen %d (-want +got):\n%s", i, l, g.Generation, diff)
					}
				}
				if err := consume.Consume(leaf, Handshake, g.Generation); err != nil {
					t.Fatal(err)
				}
				if err := consume.Consume(leaf, Application, g.Generation); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func newTree(t testing.TB, n uint32) *Tree {
	t.Helper()
	tr, err := New(bytes.Repeat([]byte{0x42}, 32), n)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestSenderAndReceiverAgree(t *testing.T) {
	send, recv := newTree(t, 4), newTree(t, 4)
	for g := uint32(0); g < 5; g++ {
		kn, err := send.Next(3, Application)
		if err != nil || kn.Generation != g {
			t.Fatalf("Next = %v, %v; want generation %d", kn.Generation, err, g)
		}
		got, err := recv.Key(3, Application, g)
		if err != nil || !bytes.Equal(got.Key, kn.Key) || !bytes.Equal(got.Nonce, kn.Nonce) {
			t.Fatalf("Key(3, app, %d) differs from the sender's: %v", g, err)
		}
		if err := recv.Consume(3, Application, g); err != nil {
			t.Fatal(err)
		}
	}
	// The handshake ratchet is independent.
	if g, _ := send.NextGeneration(3, Handshake); g != 0 {
		t.Errorf("handshake NextGeneration = %d, want 0", g)
	}
}

func TestOutOfOrderReplayAndWindow(t *testing.T) {
	tr := newTree(t, 2)
	tr.Window = Window{MaxForward: 10, MaxRetained: 3}
	steps := []struct {
		name    string
		gen     uint32
		wantErr error
	}{
		{"jump ahead to 5", 5, nil},
		{"replay of 5", 5, ErrGenerationUsed},
		{"late 4 is retained", 4, nil},
		{"replay of late 4", 4, ErrGenerationUsed},
		{"late 1 was evicted (only 3 kept)", 1, ErrGenerationUsed},
		{"late 2 retained", 2, nil},
		{"beyond the window", 17, ErrGenerationTooFar},
		{"at the edge of the window", 16, nil},
		{"after the jump, 3 evicted", 3, ErrGenerationUsed},
	}
	for _, s := range steps {
		_, kerr := tr.Key(1, Application, s.gen)
		cerr := tr.Consume(1, Application, s.gen)
		if !errors.Is(kerr, s.wantErr) || !errors.Is(cerr, s.wantErr) {
			t.Errorf("%s: Key, Consume = %v, %v; want %v", s.name, kerr, cerr, s.wantErr)
		}
	}
}

// TestKeyDoesNotChangeState: Key leaves the serialised tree as it was, also
// for a leaf whose ratchets were never started and when it fails, and the
// key it gave is the one Consume then uses.
func TestKeyDoesNotChangeState(t *testing.T) {
	tr := newTree(t, 8)
	before, _ := tr.MarshalBinary()
	kn, err := tr.Key(5, Application, 900)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Key(6, Handshake, DefaultMaxForward+1); !errors.Is(err, ErrGenerationTooFar) {
		t.Fatalf("Key beyond the window = %v", err)
	}
	if after, _ := tr.MarshalBinary(); !bytes.Equal(before, after) {
		t.Error("Key on a fresh leaf changed the serialised state")
	}
	if err := tr.Consume(5, Application, 900); err != nil {
		t.Fatal(err)
	}
	before, _ = tr.MarshalBinary()
	if _, err := tr.Key(5, Application, 901); err != nil {
		t.Fatal(err)
	}
	if after, _ := tr.MarshalBinary(); !bytes.Equal(before, after) {
		t.Error("Key on a started leaf changed the serialised state")
	}
	// The key of a leaf not started equals the one of the started leaf.
	other := newTree(t, 8)
	if err := other.Consume(5, Application, 0); err != nil {
		t.Fatal(err)
	}
	want, err := other.Key(5, Application, 900)
	if err != nil || !bytes.Equal(kn.Key, want.Key) || !bytes.Equal(kn.Nonce, want.Nonce) {
		t.Errorf("Key(900) before the leaf started = %x, after = %x (%v)", kn.Key, want.Key, err)
	}
}

// TestDeletionSchedule checks RFC 9420 Section 9.2: deriving a leaf deletes
// the node secrets on its path and keeps only the copath.
func TestDeletionSchedule(t *testing.T) {
	tr := newTree(t, 4) // nodes 0..6, root 3
	if _, err := tr.Next(3, Application); err != nil {
		t.Fatal(err)
	}
	want := []treemath.NodeIndex{1, 4} // E and C in the RFC's figure
	if diff := cmp.Diff(want, sortedKeys(tr.nodes)); diff != "" {
		t.Errorf("node secrets held after deriving leaf 3 (-want +got):\n%s", diff)
	}
	if len(tr.leaves[3].r[Application].skipped) != 0 {
		t.Error("the sender kept a key it used")
	}
	// The receiver of generation 1 keeps K0/N0 only.
	rx := newTree(t, 4)
	if err := rx.Consume(3, Application, 1); err != nil {
		t.Fatal(err)
	}
	r := rx.leaves[3].r[Application]
	if _, ok := r.skipped[0]; !ok || len(r.skipped) != 1 || r.next != 2 {
		t.Errorf("after receiving generation 1: skipped %v, next %d; want {0}, 2", r.skipped, r.next)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	tr := newTree(t, 16)
	tr.Window = Window{MaxForward: 100, MaxRetained: 5}
	for _, op := range []struct {
		leaf treemath.LeafIndex
		gen  uint32
	}{{0, 3}, {7, 0}, {7, 9}, {15, 2}} {
		if err := tr.Consume(op.leaf, Application, op.gen); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tr.Next(4, Handshake); err != nil {
		t.Fatal(err)
	}
	data, err := tr.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got := &Tree{Window: Window{MaxForward: 77}}
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	again, _ := got.MarshalBinary()
	if !bytes.Equal(again, data) {
		t.Error("re-encoding a restored tree gave other bytes")
	}
	if got.Window.MaxForward != 77 {
		t.Error("UnmarshalBinary overwrote the Window")
	}
	// The restored tree behaves like the original.
	for _, l := range []treemath.LeafIndex{0, 7, 9} {
		a, err1 := tr.Key(l, Application, 12)
		b, err2 := got.Key(l, Application, 12)
		if err1 != nil || err2 != nil || !bytes.Equal(a.Key, b.Key) {
			t.Errorf("leaf %d: keys differ after restore (%v, %v)", l, err1, err2)
		}
	}
	if _, err := got.Key(0, Application, 3); !errors.Is(err, ErrGenerationUsed) {
		t.Errorf("restored tree accepts a used generation: %v", err)
	}
	for i := range data {
		if err := new(Tree).UnmarshalBinary(data[:i]); err == nil {
			t.Fatalf("UnmarshalBinary accepted %d of %d bytes", i, len(data))
		}
	}
	if err := new(Tree).UnmarshalBinary(append(data, 0)); err == nil {
		t.Error("UnmarshalBinary accepted trailing bytes")
	}
}

func TestBadInputs(t *testing.T) {
	if _, err := New(make([]byte, 32), 3); err == nil {
		t.Error("New accepted 3 leaves")
	}
	tr := newTree(t, 2)
	if _, err := tr.Key(2, Application, 0); !errors.Is(err, ErrLeafRange) {
		t.Errorf("Key(leaf 2 of 2) = %v, want ErrLeafRange", err)
	}
	if _, err := tr.Next(9, Handshake); !errors.Is(err, ErrLeafRange) {
		t.Errorf("Next(leaf 9 of 2) = %v, want ErrLeafRange", err)
	}
}

func FuzzUnmarshal(f *testing.F) {
	tr := newTree(f, 4)
	_ = tr.Consume(1, Application, 3)
	data, _ := tr.MarshalBinary()
	f.Add(data)
	f.Fuzz(func(t *testing.T, in []byte) {
		var tr Tree
		if tr.UnmarshalBinary(in) != nil {
			return
		}
		out, err := tr.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("re-encoding %x gave %x", in, out)
		}
	})
}
