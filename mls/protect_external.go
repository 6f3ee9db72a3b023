package mls

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
)

// ExternalProposal returns a proposal from an external sender (RFC 9420,
// Section 12.1.8): a PublicMessage whose sender is entry senderIndex of the
// group's external_senders extension, signed with that entry's key. Being
// outside the group, the sender has no membership key, and its signature
// does not cover the GroupContext (Section 6.1), so it needs only the
// group's ID and current epoch. Members accept Add, Remove, PreSharedKey,
// ReInit and GroupContextExtensions proposals this way; it returns
// ErrInvalidProposal for other types.
func ExternalProposal(groupID []byte, epoch uint64, senderIndex uint32, p Proposal, sigPriv ed25519.PrivateKey, authenticatedData []byte) (*MLSMessage, error) {
	s := Sender{Type: SenderTypeExternal, Index: senderIndex}
	if err := checkProposalSender(p, s); err != nil {
		return nil, err
	}
	content := &FramedContent{
		GroupID: bytes.Clone(groupID), Epoch: epoch, Sender: s,
		AuthenticatedData: bytes.Clone(authenticatedData),
		ContentType:       ContentTypeProposal, Proposal: p,
	}
	// The Protector only signs here: no GroupContext enters the TBS of an
	// external sender, so one naming the group and epoch is enough.
	prot := &Protector{ctx: &GroupContext{GroupID: groupID, Epoch: epoch}}
	pm, err := prot.ProtectPublic(content, sigPriv, nil)
	if err != nil {
		return nil, fmt.Errorf("mls: external proposal: %w", err)
	}
	return &MLSMessage{Version: ProtocolMLS10, WireFormat: WireFormatPublicMessage, PublicMessage: pm}, nil
}
