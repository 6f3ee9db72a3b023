// Package secrettree implements the secret tree of RFC 9420 Section 9: the
// tree of secrets derived from an epoch's encryption_secret, the per-sender
// handshake and application hash ratchets (Section 9.1), and the sender-data
// key and nonce (Section 6.3.2).
//
// Deletion schedule (Section 9.2). The tree keeps a node secret only until
// both of its children have been derived from it; a leaf secret only until
// its two ratchets are started. A ratchet keeps its current secret and the
// key/nonce pairs of the generations it skipped on the way to a later one
// (out-of-order delivery), and deletes a key/nonce pair as soon as it has
// been used. A generation that was used, or whose key was evicted, can never
// be derived again: that is what makes replays fail.
//
// Out-of-order delivery is bounded by Window: a receiver derives at most
// MaxForward generations ahead of the ratchet in one step, and keeps at most
// MaxRetained skipped keys per ratchet (the oldest are evicted first).
//
// Lookups do not change the state. A receiver calls Key, tries to decrypt
// and verify, and only then calls Consume; a forged message with a far
// generation therefore cannot make the member throw away keys.
//
// A Tree is a value that serialises exactly (MarshalBinary /
// UnmarshalBinary), for storing group state.
package secrettree

import (
	"errors"
	"fmt"
	"sort"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	"github.com/torpor-dev/torpor/mls/internal/treemath"
)

// Errors returned by the tree. The mls package maps them to its own
// sentinels.
var (
	// ErrLeafRange is returned for a leaf index outside the tree.
	ErrLeafRange = errors.New("secrettree: leaf index out of range")
	// ErrGenerationUsed is returned for a generation whose key was already
	// used (a replay) or deleted.
	ErrGenerationUsed = errors.New("secrettree: generation already used or deleted")
	// ErrGenerationTooFar is returned for a generation more than
	// Window.MaxForward ahead of the ratchet.
	ErrGenerationTooFar = errors.New("secrettree: generation too far ahead")
	// ErrExhausted is returned when a ratchet reached the last uint32
	// generation.
	ErrExhausted = errors.New("secrettree: ratchet exhausted")
)

// ContentType selects one of a leaf's two ratchets.
type ContentType uint8

// The two ratchets of a leaf (RFC 9420 Section 9): handshake messages
// (proposals, commits) and application messages.
const (
	Handshake ContentType = iota
	Application
)

func (c ContentType) label() string {
	if c == Handshake {
		return "handshake"
	}
	return "application"
}

// Window bounds out-of-order delivery; see the package comment.
type Window struct {
	// MaxForward is how many generations past the next expected one a
	// receiver derives in one step. Zero means DefaultMaxForward.
	MaxForward uint32
	// MaxRetained is how many skipped keys a ratchet keeps. Zero means
	// DefaultMaxRetained; negative keeps none.
	MaxRetained int
}

// Defaults of Window.
const (
	DefaultMaxForward  = 1024
	DefaultMaxRetained = 64
)

func (w Window) maxForward() uint32 {
	if w.MaxForward == 0 {
		return DefaultMaxForward
	}
	return w.MaxForward
}

func (w Window) maxRetained() int {
	switch {
	case w.MaxRetained == 0:
		return DefaultMaxRetained
	case w.MaxRetained < 0:
		return 0
	}
	return w.MaxRetained
}

// KeyNonce is the AEAD key and nonce of one generation of a ratchet.
type KeyNonce struct {
	Generation uint32
	Key        []byte
	Nonce      []byte
}

// ratchet is one hash ratchet (RFC 9420 Section 9.1).
type ratchet struct {
	next    uint32 // generation whose key the current secret yields
	secret  []byte // ratchet_secret_[N]_[next]; nil once exhausted
	skipped map[uint32]KeyNonce
}

// leafState holds the two ratchets of a leaf once started.
type leafState struct {
	r [2]*ratchet
}

// Tree is the secret tree of one epoch.
type Tree struct {
	n uint32 // leaves
	// nodes holds the node secrets not yet consumed, by node index.
	nodes map[treemath.NodeIndex][]byte
	// leaves holds the ratchets of the leaves started so far.
	leaves map[treemath.LeafIndex]*leafState
	// Window bounds out-of-order delivery. It is configuration, not state:
	// it is not serialised.
	Window Window
}

// New returns the secret tree of a group with n leaves whose root secret is
// encryptionSecret (RFC 9420 Section 9). n must be a power of two, as ratchet
// trees always are.
func New(encryptionSecret []byte, n uint32) (*Tree, error) {
	if n == 0 || n&(n-1) != 0 {
		return nil, fmt.Errorf("secrettree: leaf count %d is not a power of two", n)
	}
	t := &Tree{n: n, nodes: map[treemath.NodeIndex][]byte{}, leaves: map[treemath.LeafIndex]*leafState{}}
	t.nodes[treemath.Root(n)] = clone(encryptionSecret)
	return t, nil
}

// Leaves returns the number of leaves of t.
func (t *Tree) Leaves() uint32 { return t.n }

// leaf returns the ratchets of l, deriving them from the tree on first use
// and deleting the node secrets this consumes (RFC 9420 Section 9.2).
func (t *Tree) leaf(l treemath.LeafIndex) (*leafState, error) {
	ls, derived, err := t.peek(l)
	if err != nil || derived == nil {
		return ls, err
	}
	for n, s := range derived {
		if s == nil {
			delete(t.nodes, n)
		} else {
			t.nodes[n] = s
		}
	}
	t.leaves[l] = ls
	return ls, nil
}

// peek returns the ratchets of l without changing t. For a leaf not
// started yet it derives them aside and also returns, in derived, the
// node secrets starting the leaf changes: a new secret for each sibling
// the walk down the tree produces, nil for each secret it consumes. leaf
// applies them; Key does not, so that a message that fails to decrypt
// leaves the tree as it was.
func (t *Tree) peek(l treemath.LeafIndex) (ls *leafState, derived map[treemath.NodeIndex][]byte, err error) {
	if uint32(l) >= t.n {
		return nil, nil, ErrLeafRange
	}
	if ls, ok := t.leaves[l]; ok {
		return ls, nil, nil
	}
	target := l.Node()
	// Find the lowest ancestor (or the leaf) whose secret is still held.
	x := target
	path := []treemath.NodeIndex{x}
	for t.nodes[x] == nil {
		if x == treemath.Root(t.n) {
			// Consumed: happens only if the state was damaged.
			return nil, nil, ErrGenerationUsed
		}
		x = treemath.Parent(x, t.n)
		path = append(path, x)
	}
	// Walk down, replacing each parent by its two children.
	derived = map[treemath.NodeIndex][]byte{}
	s := t.nodes[x]
	for i := len(path) - 1; i > 0; i-- {
		p, child := path[i], path[i-1]
		left := suite.ExpandWithLabel(s, "tree", []byte("left"), suite.HashSize)
		right := suite.ExpandWithLabel(s, "tree", []byte("right"), suite.HashSize)
		derived[p] = nil
		derived[treemath.Left(p)], derived[treemath.Right(p)] = left, right
		s = right
		if child == treemath.Left(p) {
			s = left
		}
	}
	derived[target] = nil
	ls = &leafState{}
	for _, ct := range []ContentType{Handshake, Application} {
		ls.r[ct] = &ratchet{
			secret:  suite.ExpandWithLabel(s, ct.label(), nil, suite.HashSize),
			skipped: map[uint32]KeyNonce{},
		}
	}
	return ls, derived, nil
}

// derive returns the key and nonce of generation g from ratchet secret s
// (RFC 9420 Section 9.1).
func derive(s []byte, g uint32) KeyNonce {
	return KeyNonce{
		Generation: g,
		Key:        suite.DeriveTreeSecret(s, "key", g, suite.KeySize),
		Nonce:      suite.DeriveTreeSecret(s, "nonce", g, suite.NonceSize),
	}
}

// step returns ratchet_secret_[g+1] from ratchet_secret_[g].
func step(s []byte, g uint32) []byte {
	return suite.DeriveTreeSecret(s, "secret", g, suite.HashSize)
}

// Next returns the key and nonce of the next generation of leaf l's ratchet
// ct, for sending, and deletes them from the tree: the sender uses each
// generation once.
func (t *Tree) Next(l treemath.LeafIndex, ct ContentType) (KeyNonce, error) {
	ls, err := t.leaf(l)
	if err != nil {
		return KeyNonce{}, err
	}
	r := ls.r[ct]
	if r.secret == nil {
		return KeyNonce{}, ErrExhausted
	}
	kn := derive(r.secret, r.next)
	r.advance()
	return kn, nil
}

// advance moves r one generation on, deleting the old secret.
func (r *ratchet) advance() {
	if r.next == ^uint32(0) {
		r.secret = nil
		return
	}
	r.secret = step(r.secret, r.next)
	r.next++
}

// Key returns the key and nonce of generation g of leaf l's ratchet ct, for
// receiving, without changing the tree, not even by starting the leaf's
// ratchets: call Consume once the message decrypted and verified (RFC 9420
// Section 9.2 deletes a key only once it was used). It returns ErrGenerationUsed for a generation
// already consumed or evicted and ErrGenerationTooFar beyond the window.
func (t *Tree) Key(l treemath.LeafIndex, ct ContentType, g uint32) (KeyNonce, error) {
	ls, _, err := t.peek(l)
	if err != nil {
		return KeyNonce{}, err
	}
	r := ls.r[ct]
	if g < r.next || r.secret == nil {
		kn, ok := r.skipped[g]
		if !ok {
			return KeyNonce{}, ErrGenerationUsed
		}
		return kn, nil
	}
	if g-r.next > t.Window.maxForward() {
		return KeyNonce{}, ErrGenerationTooFar
	}
	s, next := r.secret, r.next
	for next < g {
		s = step(s, next)
		next++
	}
	return derive(s, g), nil
}

// Consume deletes generation g of leaf l's ratchet ct after a successful
// decryption: the ratchet moves past g, keeping the keys of the generations
// it skipped (up to the window) for out-of-order messages. It returns the
// same errors as Key.
func (t *Tree) Consume(l treemath.LeafIndex, ct ContentType, g uint32) error {
	if _, err := t.Key(l, ct, g); err != nil {
		return err
	}
	ls, err := t.leaf(l)
	if err != nil {
		return err
	}
	r := ls.r[ct]
	if g < r.next || r.secret == nil {
		delete(r.skipped, g)
		return nil
	}
	for r.next < g {
		r.skipped[r.next] = derive(r.secret, r.next)
		r.advance()
	}
	r.advance() // past g: its key is used
	r.evict(t.Window.maxRetained())
	return nil
}

// evict keeps the max newest skipped keys.
func (r *ratchet) evict(max int) {
	if len(r.skipped) <= max {
		return
	}
	gens := make([]uint32, 0, len(r.skipped))
	for g := range r.skipped {
		gens = append(gens, g)
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i] < gens[j] })
	for _, g := range gens[:len(gens)-max] {
		delete(r.skipped, g)
	}
}

// NextGeneration returns the generation the ratchet ct of leaf l will use
// (or accept) next, starting the leaf's ratchets if needed.
func (t *Tree) NextGeneration(l treemath.LeafIndex, ct ContentType) (uint32, error) {
	ls, err := t.leaf(l)
	if err != nil {
		return 0, err
	}
	return ls.r[ct].next, nil
}

// SenderDataKeyNonce derives the sender-data key and nonce from
// sender_data_secret and the content ciphertext (RFC 9420 Section 6.3.2):
// the sample is the first KDF.Nh bytes of the ciphertext, or all of it if
// shorter.
func SenderDataKeyNonce(senderDataSecret, ciphertext []byte) (key, nonce []byte) {
	sample := ciphertext
	if len(sample) > suite.HashSize {
		sample = sample[:suite.HashSize]
	}
	key = suite.ExpandWithLabel(senderDataSecret, "key", sample, suite.KeySize)
	nonce = suite.ExpandWithLabel(senderDataSecret, "nonce", sample, suite.NonceSize)
	return key, nonce
}

func clone(b []byte) []byte { return append([]byte{}, b...) }
