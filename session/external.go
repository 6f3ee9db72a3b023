package session

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/mls"
)

// External joins (RFC 9420, Section 12.4.3.2): a member publishes a signed
// GroupInfo with external_pub; an agent joins with an external Commit the
// members process. Under a designated committer the members reject such
// Commits (only the committer commits, draft Section 6.3.1), so external
// joins are for groups without one.

// GroupInfo returns a signed GroupInfo of the group's current epoch (an
// MLSMessage) with the external_pub extension, and the ratchet_tree
// extension when withTree is set.
func (s *Sessions) GroupInfo(tx *bolt.Tx, group []byte, withTree bool) ([]byte, error) {
	st, err := s.load(tx, group)
	if err != nil {
		return nil, err
	}
	gi, err := st.g.GroupInfo(mls.GroupInfoOptions{RatchetTree: withTree, ExternalPub: true})
	if err != nil {
		return nil, err
	}
	return (&mls.MLSMessage{Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatGroupInfo, GroupInfo: gi}).Marshal()
}

// JoinExternal joins a group by external Commit from a GroupInfo (an
// MLSMessage) and the group's ratchet tree (nil when the GroupInfo carries
// it). Every leaf of the tree must be bound to its key (draft Section 4.3).
// The new group is stored in tx; the returned Commit (a PublicMessage) must
// reach every member. opts are as for Join.
func (s *Sessions) JoinExternal(tx *bolt.Tx, groupInfo, tree []byte, opts JoinOptions) (commit []byte, in *Info, err error) {
	m, err := mls.ParseMLSMessage(groupInfo)
	if err != nil {
		return nil, nil, err
	}
	if m.WireFormat != mls.WireFormatGroupInfo {
		return nil, nil, fmt.Errorf("session: MLSMessage of wire format %d, want a GroupInfo", m.WireFormat)
	}
	xo := &mls.ExternalJoinOptions{}
	if tree != nil {
		if xo.Tree, err = mls.ParseRatchetTree(tree); err != nil {
			return nil, nil, fmt.Errorf("session: ratchet tree sent with the GroupInfo: %w", err)
		}
	}
	g, msg, err := mls.JoinExternal(s.mlsConfig(), m.GroupInfo, s.credential(), s.cfg.Key.Ed25519(), xo)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.joined(tx, g, opts)
	if err != nil {
		return nil, nil, err
	}
	if commit, err = msg.Marshal(); err != nil {
		return nil, nil, err
	}
	if err := s.save(tx, st); err != nil {
		return nil, nil, err
	}
	in, err = s.info(st)
	return commit, in, err
}
