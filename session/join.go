package session

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
)

// JoinOptions are what a joiner knows besides the Welcome.
type JoinOptions struct {
	// Initiator is the agent that created the Welcome (the handshake
	// part's initiatorDid, draft Section 7.6); the zero DID skips the
	// check that it is a member of the group.
	Initiator did.DID
	// Policy is the group's commit policy from now on; a Welcome received
	// through the agent's drain names the initiator as the designated
	// committer.
	Policy Policy
}

// Join joins a group from a Welcome (an MLSMessage) for one of the
// KeyPackages in the pool, with the ratchet tree sent alongside it (nil
// when the Welcome carries a ratchet_tree extension). The tree is fully
// validated: it must match the Welcome's GroupInfo (draft Section 7.6: the
// joiner aborts otherwise), and every leaf's credential must be bound to
// its key (Section 4.3). In tx, the KeyPackage used is deleted from the
// pool and the new group stored, together; a last-resort KeyPackage is
// kept, for the next Welcome to it (RFC 9420, Section 16.8).
//
// A group of two members is a pair session with the other member: a
// previous pair session with the same agent is dropped (its messages came
// before this Welcome in queue order).
//
// A Welcome whose KeyPackage was already used to join a group this agent
// still has is recognised as applied: Join returns that group's Info and
// changes nothing (the agent's queue delivers a record again after a crash
// between its commit and its acknowledgement).
//
// Errors: ErrNoKeyPackage when the Welcome is for no KeyPackage of the pool;
// ErrGroupExists; ErrNotMember when opts.Initiator is not in the group;
// *BindingError; and package mls's errors for a Welcome or tree it
// rejects.
func (s *Sessions) Join(tx *bolt.Tx, welcome, tree []byte, opts JoinOptions) (*Info, error) {
	w, err := parseWelcome(welcome)
	if err != nil {
		return nil, err
	}
	refs := make([][]byte, 0, len(w.Secrets))
	for _, e := range w.Secrets {
		refs = append(refs, e.NewMember)
	}
	p, err := s.findKeyPackage(tx, refs)
	if errors.Is(err, ErrNoKeyPackage) {
		// The same Welcome again (a record delivered twice): applied.
		if g, ok, jerr := joinedWith(tx, refs); jerr != nil || ok {
			if jerr != nil {
				return nil, jerr
			}
			return s.Info(tx, g)
		}
	}
	if err != nil {
		return nil, err
	}
	var t *mls.RatchetTree
	if tree != nil {
		if t, err = mls.ParseRatchetTree(tree); err != nil {
			return nil, fmt.Errorf("session: ratchet tree sent with the Welcome: %w", err)
		}
	}
	g, err := mls.Join(s.mlsConfig(), w, p.kp, p.priv, t)
	if err != nil {
		return nil, fmt.Errorf("session: joining from the Welcome (the ratchet tree must match it, draft §7.6): %w", err)
	}
	if p.lastResort {
		// The same Welcome again: its KeyPackage was kept.
		if ok, err := lastResortJoined(tx, p.ref, g.GroupID()); err != nil || ok {
			if err != nil {
				return nil, err
			}
			return s.Info(tx, g.GroupID())
		}
	}
	st, err := s.joined(tx, g, opts)
	if err != nil {
		return nil, err
	}
	use := consume
	if p.lastResort {
		use = useLastResort
	}
	if err := use(tx, p.ref, st.id); err != nil {
		return nil, err
	}
	if err := s.save(tx, st); err != nil {
		return nil, err
	}
	return s.info(st)
}

// joined checks a group just joined and prepares its record.
func (s *Sessions) joined(tx *bolt.Tx, g *mls.Group, opts JoinOptions) (*stored, error) {
	id := g.GroupID()
	if ok, err := exists(tx, id); err != nil || ok {
		if err == nil {
			err = fmt.Errorf("%w: %x", ErrGroupExists, id)
		}
		return nil, err
	}
	ms, err := members(g)
	if err != nil {
		return nil, err
	}
	if !opts.Initiator.IsZero() {
		if _, err := leafOf(g, opts.Initiator); err != nil {
			return nil, fmt.Errorf("session: the Welcome's initiator %s: %w", opts.Initiator, err)
		}
	}
	if c := opts.Policy.Committer; !c.IsZero() {
		if _, err := leafOf(g, c); err != nil {
			return nil, fmt.Errorf("session: the designated committer %s: %w", c, err)
		}
	}
	st := &stored{id: id, g: g}
	if !opts.Policy.Committer.IsZero() {
		st.meta.Committer = opts.Policy.Committer.String()
	}
	if len(ms) == 2 {
		peer := ms[0].DID
		if peer == s.self {
			peer = ms[1].DID
		}
		st.meta.Peer = peer.String()
		if err := dropPair(tx, peer, id); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// dropPair drops the current pair session with peer unless it is keep.
func dropPair(tx *bolt.Tx, peer did.DID, keep []byte) error {
	old, err := peerGroup(tx, peer)
	if errors.Is(err, ErrNoSession) {
		return nil
	}
	if err != nil || bytes.Equal(old, keep) {
		return err
	}
	return drop(tx, old)
}

// parseWelcome decodes a Welcome, MLSMessage-wrapped or bare.
func parseWelcome(b []byte) (*mls.Welcome, error) {
	if m, err := mls.ParseMLSMessage(b); err == nil {
		if m.WireFormat != mls.WireFormatWelcome {
			return nil, fmt.Errorf("session: MLSMessage of wire format %d, want a Welcome", m.WireFormat)
		}
		return m.Welcome, nil
	}
	return mls.ParseWelcome(b)
}
