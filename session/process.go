package session

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
)

// Kind is what a received group message was.
type Kind int

const (
	// KindApplication is an application message: Received.Plaintext
	// holds it.
	KindApplication Kind = iota + 1
	// KindProposal is a proposal, cached for a later Commit.
	KindProposal
	// KindCommit is a Commit that moved the group to a new epoch.
	KindCommit
)

func (k Kind) String() string {
	switch k {
	case KindApplication:
		return "application"
	case KindProposal:
		return "proposal"
	case KindCommit:
		return "commit"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Received is a processed group message.
type Received struct {
	Group []byte
	Kind  Kind
	// Sender is the DID bound to the credential of the member that sent
	// the message, as MLS authenticated it (its leaf signature): the
	// identity check 3 of draft Section 8.1 compares issuerDid with.
	Sender did.DID
	// Plaintext is the application data of a KindApplication message.
	Plaintext []byte
	// Epoch is the group's epoch after the message.
	Epoch uint64
	// Removed is set when a Commit removed this agent: the session was
	// deleted.
	Removed bool
}

// Process processes an MLSMessage (PrivateMessage or PublicMessage) of one
// of the agent's groups and stores the result in tx: the new epoch of a
// Commit, the cached proposal, or the ratchet advanced by an application
// message with its used key deleted (RFC 9420, Section 9.2) — each in the
// one transaction (draft Section 6.4).
//
// claimed is the sender identity a transport envelope asserts (the MLS wire
// part's senderDid), or the zero DID. Under a designated committer (draft
// Section 6.3.1) a Commit is rejected with ErrNotCommitter, before anything
// changes, when claimed is another agent or when the member MLS
// authenticates as its sender is not the committer.
//
// A message for a group not joined yet, or for an epoch not reached yet,
// returns an error for which Deferred reports true; one of a past epoch
// ErrStaleEpoch. A message that fails verification or decryption changes
// nothing.
func (s *Sessions) Process(tx *bolt.Tx, msg []byte, claimed did.DID) (*Received, error) {
	m, err := mls.ParseMLSMessage(msg)
	if err != nil {
		return nil, err
	}
	h, err := header(m)
	if err != nil {
		return nil, err
	}
	st, err := s.load(tx, h.group)
	if errors.Is(err, ErrNoSession) {
		return nil, deferredError{err}
	}
	if err != nil {
		return nil, err
	}
	switch e := st.g.Epoch(); {
	case h.epoch > e:
		return nil, deferredError{fmt.Errorf("%w: epoch %d, group %x is at %d", ErrFutureEpoch, h.epoch, h.group, e)}
	case h.epoch < e && h.content == mls.ContentTypeApplication && m.PrivateMessage != nil:
		// A late application message (RFC 9420, Section 15.3): sent before
		// its sender saw a Commit this device has already processed — the
		// usual case for a device that drains a queue after sleeping.
		r, err := s.processLate(st, m)
		if err != nil {
			return nil, err
		}
		return r, s.save(tx, st)
	case h.epoch < e:
		return nil, fmt.Errorf("%w: epoch %d, group %x is at %d", ErrStaleEpoch, h.epoch, h.group, e)
	}
	if err := s.precheck(st, m, h, claimed); err != nil {
		return nil, err
	}
	r, err := s.process(st, m)
	if err != nil {
		return nil, err
	}
	if r.Removed {
		return r, drop(tx, st.id)
	}
	return r, s.save(tx, st)
}

// processLate decrypts an application message of one of the past epochs
// the group keeps keys for. Its sender is the DID bound to the signature key
// that verified it in that epoch — the member may since have left the tree,
// or another member taken its leaf. The key is bound to the DID because
// every leaf's credential binding was checked when it entered the tree
// (draft Section 4.3). A message of an epoch whose keys are gone fails with
// ErrStaleEpoch.
func (s *Sessions) processLate(st *stored, m *mls.MLSMessage) (*Received, error) {
	am, err := st.g.DecryptApplication(m)
	if errors.Is(err, mls.ErrEpochMismatch) {
		return nil, fmt.Errorf("%w: epoch %d, group %x is at %d and keeps no keys for it", ErrStaleEpoch, m.PrivateMessage.Epoch, m.PrivateMessage.GroupID, st.g.Epoch())
	}
	if err != nil {
		return nil, err
	}
	sender, err := did.FromPublicKey(am.SignatureKey)
	if err != nil {
		return nil, fmt.Errorf("session: late message: %w", err)
	}
	return &Received{Group: st.id, Kind: KindApplication, Sender: sender, Plaintext: am.Data, Epoch: st.g.Epoch()}, nil
}

// msgHeader is what a group message says in the clear.
type msgHeader struct {
	group   []byte
	epoch   uint64
	content mls.ContentType
}

func header(m *mls.MLSMessage) (msgHeader, error) {
	switch {
	case m.WireFormat == mls.WireFormatPrivateMessage && m.PrivateMessage != nil:
		pm := m.PrivateMessage
		return msgHeader{pm.GroupID, pm.Epoch, pm.ContentType}, nil
	case m.WireFormat == mls.WireFormatPublicMessage && m.PublicMessage != nil:
		c := &m.PublicMessage.Content
		return msgHeader{c.GroupID, c.Epoch, c.ContentType}, nil
	}
	return msgHeader{}, fmt.Errorf("session: MLSMessage of wire format %d is not a group message", m.WireFormat)
}

// precheck applies the designated committer profile before processing:
// the envelope's claim, and for a PublicMessage the sender it names (draft
// Section 6.3.1). The MLS-authenticated sender of a PrivateMessage Commit
// is checked after decryption, before the state is stored.
func (s *Sessions) precheck(st *stored, m *mls.MLSMessage, h msgHeader, claimed did.DID) error {
	p, err := st.policy()
	if err != nil || p.Committer.IsZero() || h.content != mls.ContentTypeCommit {
		return err
	}
	if !claimed.IsZero() && claimed != p.Committer {
		return fmt.Errorf("%w: the envelope names %s, the committer is %s", ErrNotCommitter, claimed, p.Committer)
	}
	if m.PublicMessage != nil {
		return checkCommitter(st.g, m.PublicMessage.Content.Sender, p.Committer)
	}
	return nil
}

// checkCommitter checks that sender is the member whose credential binds
// committer.
func checkCommitter(g *mls.Group, sender mls.Sender, committer did.DID) error {
	if sender.Type != mls.SenderTypeMember {
		return fmt.Errorf("%w: a sender of type %d may not commit", ErrNotCommitter, sender.Type)
	}
	l := g.Member(sender.Index)
	if l == nil {
		return fmt.Errorf("%w: leaf %d is not a member", ErrNotCommitter, sender.Index)
	}
	id, err := leafDID(l)
	if err != nil {
		return err
	}
	if id != committer {
		return fmt.Errorf("%w: the Commit is signed by %s, the committer is %s", ErrNotCommitter, id, committer)
	}
	return nil
}

// process runs the message through the group in memory; the caller stores
// the result.
func (s *Sessions) process(st *stored, m *mls.MLSMessage) (*Received, error) {
	g := st.g
	p, err := st.policy()
	if err != nil {
		return nil, err
	}
	// The sender of a PrivateMessage is known only once decrypted; for a
	// Commit under a designated committer it is checked against the tree
	// of the epoch the Commit was made in, before the result is stored.
	var senderBefore map[uint32]did.DID
	if ms, err := members(g); err == nil {
		senderBefore = map[uint32]did.DID{}
		for _, mb := range ms {
			senderBefore[mb.Leaf] = mb.DID
		}
	}
	pm, err := g.ProcessMessage(m)
	if err != nil {
		return nil, err
	}
	r := &Received{Group: st.id, Epoch: g.Epoch()}
	switch pm.ContentType {
	case mls.ContentTypeApplication:
		r.Kind, r.Plaintext = KindApplication, pm.ApplicationData
	case mls.ContentTypeProposal:
		r.Kind = KindProposal
		if err := checkProposal(pm.Proposal, pm.Sender, senderBefore); err != nil {
			return nil, err
		}
	case mls.ContentTypeCommit:
		r.Kind = KindCommit
	}
	r.Sender, err = messageSender(pm.Sender, senderBefore, m)
	if err != nil {
		return nil, err
	}
	if r.Kind == KindCommit && !p.Committer.IsZero() && r.Sender != p.Committer {
		return nil, fmt.Errorf("%w: the Commit is signed by %s, the committer is %s", ErrNotCommitter, r.Sender, p.Committer)
	}
	if pm.Commit != nil && pm.Commit.Removed {
		r.Removed = true
	}
	return r, nil
}

// messageSender returns the DID of an authenticated sender: a member's leaf
// in the epoch the message was sent in, or the joiner of an external
// Commit (its UpdatePath leaf). Other senders (external proposals) have no
// DID.
func messageSender(sender mls.Sender, before map[uint32]did.DID, m *mls.MLSMessage) (did.DID, error) {
	switch sender.Type {
	case mls.SenderTypeMember:
		id, ok := before[sender.Index]
		if !ok {
			return did.DID{}, fmt.Errorf("session: sender leaf %d has no bound credential", sender.Index)
		}
		return id, nil
	case mls.SenderTypeNewMemberCommit:
		if pub := m.PublicMessage; pub != nil && pub.Content.Commit != nil && pub.Content.Commit.Path != nil {
			return leafDID(&pub.Content.Commit.Path.LeafNode)
		}
	}
	return did.DID{}, nil
}

// checkProposal checks the credential binding of a proposal's new leaf as
// it arrives (draft Section 4.3), rather than only when a Commit covers
// it, so that a bad proposal is refused at once and never cached. An
// Update must keep its sender's DID (RFC 9420, Sections 5.3.1 and 12.1.2:
// the new credential must be a valid successor of the sender's, and
// validateSuccessor checks it again when a Commit covers the Update);
// before maps the leaves of the epoch to their DIDs.
func checkProposal(p mls.Proposal, sender mls.Sender, before map[uint32]did.DID) error {
	switch p := p.(type) {
	case *mls.AddProposal:
		_, err := leafDID(&p.KeyPackage.LeafNode)
		return err
	case *mls.UpdateProposal:
		id, err := leafDID(&p.LeafNode)
		if err != nil {
			return err
		}
		if was, ok := before[sender.Index]; sender.Type != mls.SenderTypeMember || !ok || was != id {
			return identityChanged(was.String(), id.String())
		}
	}
	return nil
}
