package mls

import (
	"bytes"
)

// GroupInfoOptions chooses the optional extensions of a GroupInfo (RFC
// 9420, Section 12.4.3).
type GroupInfoOptions struct {
	// RatchetTree includes the ratchet tree (ratchet_tree extension, RFC
	// 9420 Section 12.4.3.3), so a joiner needs no other source.
	RatchetTree bool
	// ExternalPub includes the external_pub extension (Section 12.4.3.2),
	// which lets non-members join with an external Commit.
	ExternalPub bool
}

// GroupInfo returns a GroupInfo for the current epoch signed by this member
// (RFC 9420, Section 12.4.3): the GroupContext, the confirmation tag of the
// Commit that started the epoch and the extensions opts asks for. Publish
// it to let clients join by external Commit (with ExternalPub).
func (g *Group) GroupInfo(opts GroupInfoOptions) (*GroupInfo, error) {
	if err := g.usable(); err != nil {
		return nil, err
	}
	var exts []Extension
	if opts.RatchetTree {
		exts = append(exts, Extension{Type: ExtensionTypeRatchetTree, Data: g.tree.Marshal()})
	}
	if opts.ExternalPub {
		_, pub, err := g.epoch.ExternalKeyPair()
		if err != nil {
			return nil, err
		}
		exts = append(exts, ExternalPubExtension(pub))
	}
	return g.signedGroupInfo(exts)
}

// signedGroupInfo returns the GroupInfo of the current epoch with exts,
// signed by this member. The commit code calls it for Welcome messages once
// the new epoch is installed.
func (g *Group) signedGroupInfo(exts []Extension) (*GroupInfo, error) {
	gi := &GroupInfo{
		GroupContext:    *g.ctx.clone(),
		Extensions:      exts,
		ConfirmationTag: bytes.Clone(g.confirmationTag),
	}
	if err := gi.Sign(uint32(g.self), g.sigPriv); err != nil {
		return nil, err
	}
	return gi, nil
}
