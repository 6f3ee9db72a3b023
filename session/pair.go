package session

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// Pair sessions, draft-chapman-a2a-mls-03 Section 6.2: the initiator
// fetches the responder's KeyPackage, checks it against the identity it
// expected, creates a group containing itself, commits an Add of the
// responder, and delivers the Welcome and the ratchet tree in a handshake
// part (Section 7.6). The initiator is the session's designated committer.
//
// The initiator stores the group at once, marked pending, and uses it only
// once Delivered confirms that the handshake reached the responder (or its
// relay's queue). A crash in between leaves a pending group that is never
// used to send: the next send establishes a new session, and the responder
// drops the older pair session when it joins the newer one.

// Pair is a pair session just established by this agent.
type Pair struct {
	Group []byte
	Peer  did.DID
	// Handshake is the part to send to Peer.
	Handshake a2a.Handshake
}

// EstablishPair creates a pair session with peer from its KeyPackage (as
// fetched, MLSMessage-wrapped or bare) and stores it pending in tx. The
// KeyPackage must verify and bind peer (ErrIdentityMismatch, *BindingError
// otherwise), before anything is stored.
func (s *Sessions) EstablishPair(tx *bolt.Tx, peer did.DID, keyPackage []byte) (*Pair, error) {
	if peer.IsZero() || peer == s.self {
		return nil, fmt.Errorf("session: no pair session with %q", peer)
	}
	st, err := s.create(tx, nil, Policy{Committer: s.self})
	if err != nil {
		return nil, err
	}
	c, err := s.commit(st, Change{Add: [][]byte{keyPackage}, Expect: []did.DID{peer}})
	if err != nil {
		return nil, err
	}
	st.meta.Peer, st.meta.Pending = peer.String(), true
	if err := s.save(tx, st); err != nil {
		return nil, err
	}
	h, _ := c.Handshake(s.self)
	return &Pair{Group: st.id, Peer: peer, Handshake: h}, nil
}

// Delivered marks a pending pair session as established, once its
// handshake was delivered: it becomes the current pair session with its
// peer, replacing (and dropping) any earlier one.
func (s *Sessions) Delivered(tx *bolt.Tx, group []byte) error {
	st, err := s.load(tx, group)
	if err != nil {
		return err
	}
	if !st.meta.Pending {
		return nil
	}
	peer, err := did.Parse(st.meta.Peer)
	if err != nil {
		return err
	}
	if err := dropPair(tx, peer, st.id); err != nil {
		return err
	}
	st.meta.Pending = false
	return s.save(tx, st)
}
