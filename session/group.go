package session

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
)

// Policy is who may change a group's membership.
type Policy struct {
	// Committer is the designated committer (draft Section 6.3.1): the only
	// member whose Commits are accepted and who may make them. The zero
	// DID lets every member commit (plain RFC 9420 group semantics).
	Committer did.DID
}

// Member is one member of a group: its leaf and the DID its credential
// binds.
type Member struct {
	Leaf uint32
	DID  did.DID
}

// Info describes a group's current epoch.
type Info struct {
	Group              []byte
	Epoch              uint64
	EpochAuthenticator []byte
	TreeHash           []byte
	Self               uint32 // our leaf
	Members            []Member
	Policy             Policy
	// Peer is the other member of a pair session; zero for a group
	// session.
	Peer did.DID
}

// MemberDIDs returns the members' DIDs in leaf order.
func (i *Info) MemberDIDs() []did.DID {
	out := make([]did.DID, 0, len(i.Members))
	for _, m := range i.Members {
		out = append(out, m.DID)
	}
	return out
}

func (s *Sessions) info(st *stored) (*Info, error) {
	g := st.g
	in := &Info{
		Group: bytes.Clone(st.id), Epoch: g.Epoch(), EpochAuthenticator: g.EpochAuthenticator(),
		TreeHash: g.GroupContext().TreeHash, Self: g.LeafIndex(),
	}
	var err error
	if in.Policy, err = st.policy(); err != nil {
		return nil, err
	}
	if st.meta.Peer != "" {
		in.Peer = did.MustParse(st.meta.Peer) // checked when loaded
	}
	if in.Members, err = members(g); err != nil {
		return nil, err
	}
	return in, nil
}

// members lists the members with the DIDs their credentials bind.
func members(g *mls.Group) ([]Member, error) {
	var out []Member
	for _, l := range g.Members() {
		c, key, ok := g.MemberCredential(l)
		if !ok {
			return nil, fmt.Errorf("session: no member at leaf %d", l)
		}
		id, err := CheckCredential(c, key)
		if err != nil {
			return nil, fmt.Errorf("session: member at leaf %d: %w", l, err)
		}
		out = append(out, Member{Leaf: l, DID: id})
	}
	return out, nil
}

// leafOf returns the leaf of the member whose credential binds id.
func leafOf(g *mls.Group, id did.DID) (uint32, error) {
	ms, err := members(g)
	if err != nil {
		return 0, err
	}
	for _, m := range ms {
		if m.DID == id {
			return m.Leaf, nil
		}
	}
	return 0, fmt.Errorf("%w: %s", ErrNotMember, id)
}

func (st *stored) policy() (Policy, error) {
	var p Policy
	if st.meta.Committer != "" {
		var err error
		if p.Committer, err = did.Parse(st.meta.Committer); err != nil {
			return Policy{}, err
		}
	}
	return p, nil
}

// Info returns the group's current epoch and members.
func (s *Sessions) Info(tx *bolt.Tx, group []byte) (*Info, error) {
	st, err := s.load(tx, group)
	if err != nil {
		return nil, err
	}
	return s.info(st)
}

// Create creates a group with this agent as its only member (RFC 9420,
// Section 11) under policy p, with group ID id (nil: 16 random bytes), and
// stores it in tx.
func (s *Sessions) Create(tx *bolt.Tx, id []byte, p Policy) (*Info, error) {
	st, err := s.create(tx, id, p)
	if err != nil {
		return nil, err
	}
	if err := s.save(tx, st); err != nil {
		return nil, err
	}
	return s.info(st)
}

func (s *Sessions) create(tx *bolt.Tx, id []byte, p Policy) (*stored, error) {
	if id == nil {
		id = make([]byte, 16)
		if _, err := io.ReadFull(s.rand(), id); err != nil {
			return nil, err
		}
	}
	if ok, err := exists(tx, id); err != nil || ok {
		if err == nil {
			err = fmt.Errorf("%w: %x", ErrGroupExists, id)
		}
		return nil, err
	}
	g, err := mls.NewGroup(s.mlsConfig(), id, s.credential(), s.cfg.Key.Ed25519(), nil)
	if err != nil {
		return nil, err
	}
	st := &stored{id: bytes.Clone(id), g: g}
	if !p.Committer.IsZero() {
		st.meta.Committer = p.Committer.String()
	}
	return st, nil
}

func (s *Sessions) rand() io.Reader {
	if s.cfg.Rand != nil {
		return s.cfg.Rand
	}
	return rand.Reader
}

// Export returns MLS-Exporter(label, context, length) of the group's
// current epoch (RFC 9420, Section 8.5).
func (s *Sessions) Export(tx *bolt.Tx, group []byte, label string, context []byte, length int) ([]byte, error) {
	st, err := s.load(tx, group)
	if err != nil {
		return nil, err
	}
	return st.g.Export(label, context, length)
}
