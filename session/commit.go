package session

import (
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// Change is a membership change this agent commits (RFC 9420, Section
// 12.4; draft Section 6.3.2).
type Change struct {
	// Add holds the KeyPackages of new members, MLSMessage-wrapped or
	// bare. Each is verified and its credential binding checked (draft
	// Section 4.3) before anything changes.
	Add [][]byte
	// Expect, when not empty, names the agent each Add must be for (draft
	// Section 6.2); a zero DID accepts any.
	Expect []did.DID
	// Remove names members to remove.
	Remove []did.DID
	// Update gives the Commit an UpdatePath even when no proposal needs
	// one: a fresh leaf key for this agent (post-compromise security).
	Update bool
	// Public sends the Commit as a PublicMessage, as draft Section 6.3.2
	// fans Commits out; otherwise it is a PrivateMessage.
	Public bool
	// RatchetTreeInWelcome also puts the ratchet tree inside the Welcome;
	// it is always returned for the handshake part either way.
	RatchetTreeInWelcome bool
}

// Committed is a Commit this agent made and applied. The group is already
// in the new epoch (and stored so in the caller's transaction): deliver
// Commit to Existing on the MLS wire and Welcome with RatchetTree to Added
// in a handshake part (draft Section 6.3.2). A Commit that reaches only
// some members splits the group's epochs; the draft leaves recovery out of
// scope and asks to fail closed: drop the session and re-establish it.
type Committed struct {
	Group []byte
	// Commit is the MLSMessage for the existing members.
	Commit []byte
	// Welcome is the MLSMessage for the new members; nil when none.
	Welcome []byte
	// RatchetTree is the new epoch's ratchet tree, for the joiners.
	RatchetTree []byte
	// Existing are the members that must process Commit: all but this
	// agent and the new members (after a removal: the remaining ones).
	Existing []did.DID
	// Added and Removed are the agents the Commit added and removed.
	Added, Removed []did.DID
	// Info is the group in the new epoch.
	Info *Info
}

// Wire returns the Commit as an MLS wire part (draft Section 7.5) naming
// self as its sender.
func (c *Committed) Wire(self did.DID) a2a.MLSWire {
	return a2a.MLSWire{Wire: c.Commit, SenderDID: self}
}

// Handshake returns the handshake object for the new members (draft
// Section 7.6), or ok false when the Commit added none.
func (c *Committed) Handshake(self did.DID) (h a2a.Handshake, ok bool) {
	if c.Welcome == nil {
		return a2a.Handshake{}, false
	}
	return a2a.Handshake{InitiatorDID: self, Welcome: c.Welcome, RatchetTree: c.RatchetTree,
		MemberDIDs: c.Info.MemberDIDs()}, true
}

// Commit makes and applies a Commit of ch plus every proposal received in
// the epoch (by reference), and stores the new epoch in tx. Under a
// designated committer other than this agent it returns ErrNotCommitter
// (draft Section 6.3.1). A KeyPackage that fails verification or binding
// returns its error and changes nothing.
func (s *Sessions) Commit(tx *bolt.Tx, group []byte, ch Change) (*Committed, error) {
	st, err := s.load(tx, group)
	if err != nil {
		return nil, err
	}
	c, err := s.commit(st, ch)
	if err != nil {
		return nil, err
	}
	if err := s.save(tx, st); err != nil {
		return nil, err
	}
	return c, nil
}

// commit applies ch to st.g in memory.
func (s *Sessions) commit(st *stored, ch Change) (*Committed, error) {
	p, err := st.policy()
	if err != nil {
		return nil, err
	}
	if !p.Committer.IsZero() && p.Committer != s.self {
		return nil, fmt.Errorf("%w: %s is the committer of group %x", ErrNotCommitter, p.Committer, st.id)
	}
	if st.meta.Pending {
		return nil, ErrNotDelivered
	}
	opts, added, err := s.changeProposals(st.g, ch)
	if err != nil {
		return nil, err
	}
	pc, err := st.g.Commit(opts)
	if err != nil {
		return nil, err
	}
	if err := st.g.MergeCommit(pc); err != nil {
		return nil, err
	}
	return s.committed(st, pc, added, ch.Remove)
}

// changeProposals checks ch and turns it into CommitOptions.
func (s *Sessions) changeProposals(g *mls.Group, ch Change) (*mls.CommitOptions, []did.DID, error) {
	if len(ch.Expect) > 0 && len(ch.Expect) != len(ch.Add) {
		return nil, nil, errors.New("session: Change.Expect must name one agent per Add")
	}
	opts := &mls.CommitOptions{ForcePath: ch.Update, Public: ch.Public, RatchetTreeInWelcome: ch.RatchetTreeInWelcome}
	var added []did.DID
	for i, b := range ch.Add {
		kp, err := ParseKeyPackage(b)
		if err != nil {
			return nil, nil, err
		}
		var want did.DID
		if len(ch.Expect) > 0 {
			want = ch.Expect[i]
		}
		id, err := CheckKeyPackage(s.mlsConfig(), kp, want)
		if err != nil {
			return nil, nil, err
		}
		added = append(added, id)
		opts.Proposals = append(opts.Proposals, &mls.AddProposal{KeyPackage: *kp})
	}
	for _, id := range ch.Remove {
		leaf, err := leafOf(g, id)
		if err != nil {
			return nil, nil, err
		}
		if leaf == g.LeafIndex() {
			return nil, nil, errors.New("session: a member cannot commit its own removal")
		}
		opts.Proposals = append(opts.Proposals, &mls.RemoveProposal{Removed: leaf})
	}
	return opts, added, nil
}

// committed describes a merged Commit.
func (s *Sessions) committed(st *stored, pc *mls.PendingCommit, added, removed []did.DID) (*Committed, error) {
	c := &Committed{Group: st.id, Added: added, Removed: removed, RatchetTree: st.g.RatchetTree().Marshal()}
	var err error
	if c.Commit, err = pc.Message.Marshal(); err != nil {
		return nil, err
	}
	if pc.Welcome != nil {
		if c.Welcome, err = pc.Welcome.Marshal(); err != nil {
			return nil, err
		}
	}
	if c.Info, err = s.info(st); err != nil {
		return nil, err
	}
	for _, m := range c.Info.Members {
		if m.DID != s.self && !slices.Contains(added, m.DID) {
			c.Existing = append(c.Existing, m.DID)
		}
	}
	return c, nil
}

// Proposal is one proposal to send on its own, for a later Commit by
// reference (RFC 9420, Section 12.1). Set exactly one member.
type Proposal struct {
	Add    []byte  // a KeyPackage, checked as in Change.Add
	Remove did.DID // a member to remove
	Update bool    // a fresh leaf key for this agent
}

// Propose sends p in the group and returns the MLSMessage for every
// member, including the one that will commit it; the proposal is cached so
// that this agent's own next Commit covers it too. It is stored in tx.
func (s *Sessions) Propose(tx *bolt.Tx, group []byte, p Proposal, public bool) ([]byte, error) {
	st, err := s.load(tx, group)
	if err != nil {
		return nil, err
	}
	opts := &mls.SendOptions{Public: public}
	var m *mls.MLSMessage
	switch {
	case p.Update && p.Add == nil && p.Remove.IsZero():
		m, err = st.g.ProposeUpdate(opts)
	case p.Add != nil && !p.Update && p.Remove.IsZero():
		var kp *mls.KeyPackage
		if kp, err = ParseKeyPackage(p.Add); err != nil {
			return nil, err
		}
		if _, err = CheckKeyPackage(s.mlsConfig(), kp, did.DID{}); err != nil {
			return nil, err
		}
		m, err = st.g.Propose(&mls.AddProposal{KeyPackage: *kp}, opts)
	case !p.Remove.IsZero() && p.Add == nil && !p.Update:
		var leaf uint32
		if leaf, err = leafOf(st.g, p.Remove); err != nil {
			return nil, err
		}
		m, err = st.g.Propose(&mls.RemoveProposal{Removed: leaf}, opts)
	default:
		return nil, errors.New("session: a Proposal needs exactly one of Add, Remove and Update")
	}
	if err != nil {
		return nil, err
	}
	wire, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	return wire, s.save(tx, st)
}
