package secrettree

import (
	"errors"
	"slices"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	"github.com/torpor-dev/torpor/mls/internal/treemath"
	"github.com/torpor-dev/torpor/mls/internal/wire"
)

// stateVersion is the first byte of the serialised form; bump it when the
// layout changes.
const stateVersion = 1

var errBadState = errors.New("secrettree: malformed serialised state")

// MarshalBinary encodes the tree's state: its size, the node secrets still
// held and each started leaf's ratchets with their skipped keys. The same
// state always encodes to the same bytes. The Window is not included.
func (t *Tree) MarshalBinary() ([]byte, error) {
	return wire.Marshal(func(b *cryptobyte.Builder) {
		b.AddUint8(stateVersion)
		b.AddUint32(t.n)
		nodes := sortedKeys(t.nodes)
		wire.AddVarVector(b, func(b *cryptobyte.Builder) {
			for _, x := range nodes {
				b.AddUint32(uint32(x))
				wire.AddVarBytes(b, t.nodes[x])
			}
		})
		leaves := sortedKeys(t.leaves)
		wire.AddVarVector(b, func(b *cryptobyte.Builder) {
			for _, l := range leaves {
				b.AddUint32(uint32(l))
				for _, r := range t.leaves[l].r {
					r.marshal(b)
				}
			}
		})
	})
}

func (r *ratchet) marshal(b *cryptobyte.Builder) {
	b.AddUint32(r.next)
	wire.AddOptional(b, r.secret != nil, func(b *cryptobyte.Builder) { wire.AddVarBytes(b, r.secret) })
	gens := sortedKeys(r.skipped)
	wire.AddVarVector(b, func(b *cryptobyte.Builder) {
		for _, g := range gens {
			kn := r.skipped[g]
			b.AddUint32(g)
			wire.AddVarBytes(b, kn.Key)
			wire.AddVarBytes(b, kn.Nonce)
		}
	})
}

// UnmarshalBinary restores a tree encoded by MarshalBinary. The Window is
// left as it was.
func (t *Tree) UnmarshalBinary(data []byte) error {
	s := cryptobyte.String(data)
	var version uint8
	var n uint32
	var nodes, leaves cryptobyte.String
	if !s.ReadUint8(&version) || version != stateVersion || !s.ReadUint32(&n) ||
		n == 0 || n&(n-1) != 0 ||
		!wire.ReadVarVector(&s, &nodes) || !wire.ReadVarVector(&s, &leaves) || !s.Empty() {
		return errBadState
	}
	out := Tree{n: n, nodes: map[treemath.NodeIndex][]byte{}, leaves: map[treemath.LeafIndex]*leafState{}, Window: t.Window}
	if !out.unmarshalNodes(nodes) || !out.unmarshalLeaves(leaves) {
		return errBadState
	}
	*t = out
	return nil
}

// unmarshalNodes reads the held node secrets. Entries must be in strictly
// increasing order, so that every state has exactly one encoding.
func (t *Tree) unmarshalNodes(s cryptobyte.String) bool {
	width := treemath.NodeWidth(t.n)
	prev := int64(-1)
	for !s.Empty() {
		var x uint32
		var secret []byte
		if !s.ReadUint32(&x) || x >= width || int64(x) <= prev ||
			!wire.ReadVarBytes(&s, &secret) || len(secret) != suite.HashSize {
			return false
		}
		prev = int64(x)
		t.nodes[treemath.NodeIndex(x)] = secret
	}
	return true
}

// unmarshalLeaves reads the started leaves' ratchets, in increasing leaf
// order.
func (t *Tree) unmarshalLeaves(s cryptobyte.String) bool {
	prev := int64(-1)
	for !s.Empty() {
		var l uint32
		if !s.ReadUint32(&l) || l >= t.n || int64(l) <= prev {
			return false
		}
		prev = int64(l)
		ls := &leafState{}
		for i := range ls.r {
			r, ok := unmarshalRatchet(&s)
			if !ok {
				return false
			}
			ls.r[i] = r
		}
		t.leaves[treemath.LeafIndex(l)] = ls
	}
	return true
}

func unmarshalRatchet(s *cryptobyte.String) (*ratchet, bool) {
	r := &ratchet{skipped: map[uint32]KeyNonce{}}
	var present bool
	var skipped cryptobyte.String
	if !s.ReadUint32(&r.next) || !wire.ReadOptional(s, &present) {
		return nil, false
	}
	if present && (!wire.ReadVarBytes(s, &r.secret) || len(r.secret) != suite.HashSize) {
		return nil, false
	}
	if !wire.ReadVarVector(s, &skipped) {
		return nil, false
	}
	prev := int64(-1)
	for !skipped.Empty() {
		kn := KeyNonce{}
		if !skipped.ReadUint32(&kn.Generation) || int64(kn.Generation) <= prev || kn.Generation >= r.next ||
			!wire.ReadVarBytes(&skipped, &kn.Key) ||
			!wire.ReadVarBytes(&skipped, &kn.Nonce) || len(kn.Key) != suite.KeySize || len(kn.Nonce) != suite.NonceSize {
			return nil, false
		}
		prev = int64(kn.Generation)
		r.skipped[kn.Generation] = kn
	}
	return r, true
}

func sortedKeys[K ~uint32, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
