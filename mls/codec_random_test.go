package mls

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// gen builds random structures for the marshal/unmarshal test. Empty
// vectors are nil, as the decoder returns them.
type gen struct{ r *rand.Rand }

func (g gen) bytes() []byte {
	n := g.r.IntN(5) * g.r.IntN(20)
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

func (g gen) u16s() []uint16 {
	var out []uint16
	for range g.r.IntN(4) {
		out = append(out, uint16(g.r.Uint32()))
	}
	return out
}

func conv[T ~uint16](vs []uint16) []T {
	var out []T
	for _, v := range vs {
		out = append(out, T(v))
	}
	return out
}

func (g gen) extensions() []Extension {
	var out []Extension
	for i := range g.r.IntN(3) {
		out = append(out, Extension{Type: ExtensionType(i*7 + g.r.IntN(7)), Data: g.bytes()})
	}
	return out
}

func (g gen) credential() Credential {
	switch g.r.IntN(3) {
	case 0:
		return Credential{Type: CredentialTypeBasic, Identity: g.bytes()}
	case 1:
		c := Credential{Type: CredentialTypeX509}
		for range g.r.IntN(3) {
			c.Certificates = append(c.Certificates, append([]byte{1}, g.bytes()...))
		}
		return c
	}
	return Credential{Type: CredentialType(3 + g.r.IntN(0xfff0)), Data: g.bytes()}
}

func (g gen) leafNode() *LeafNode {
	l := &LeafNode{
		EncryptionKey: g.bytes(), SignatureKey: g.bytes(), Credential: g.credential(),
		Capabilities: Capabilities{
			Versions: conv[ProtocolVersion](g.u16s()), CipherSuites: conv[CipherSuite](g.u16s()),
			Extensions: conv[ExtensionType](g.u16s()), Proposals: conv[ProposalType](g.u16s()),
			Credentials: conv[CredentialType](g.u16s()),
		},
		Source:     LeafNodeSource(1 + g.r.IntN(3)),
		Extensions: g.extensions(), Signature: g.bytes(),
	}
	switch l.Source {
	case LeafNodeSourceKeyPackage:
		l.Lifetime = Lifetime{NotBefore: g.r.Uint64(), NotAfter: g.r.Uint64()}
	case LeafNodeSourceCommit:
		l.ParentHash = g.bytes()
	}
	return l
}

func (g gen) keyPackage() *KeyPackage {
	return &KeyPackage{Version: 1, CipherSuite: CipherSuite(g.r.Uint32()), InitKey: g.bytes(),
		LeafNode: *g.leafNode(), Extensions: g.extensions(), Signature: g.bytes()}
}

func (g gen) psk() PreSharedKeyID {
	if g.r.IntN(2) == 0 {
		return PreSharedKeyID{Type: PSKTypeExternal, PSKID: g.bytes(), Nonce: g.bytes()}
	}
	return PreSharedKeyID{Type: PSKTypeResumption, Usage: ResumptionPSKUsage(g.r.IntN(4)),
		PSKGroupID: g.bytes(), PSKEpoch: g.r.Uint64(), Nonce: g.bytes()}
}

func (g gen) proposal() Proposal {
	switch g.r.IntN(8) {
	case 0:
		return &AddProposal{KeyPackage: *g.keyPackage()}
	case 1:
		return &UpdateProposal{LeafNode: *g.leafNode()}
	case 2:
		return &RemoveProposal{Removed: g.r.Uint32()}
	case 3:
		return &PreSharedKeyProposal{PSK: g.psk()}
	case 4:
		return &ReInitProposal{GroupID: g.bytes(), Version: 1, CipherSuite: 1, Extensions: g.extensions()}
	case 5:
		return &ExternalInitProposal{KEMOutput: g.bytes()}
	case 6:
		return &GroupContextExtensionsProposal{Extensions: g.extensions()}
	}
	return &UnknownProposal{Type: ProposalType(8 + g.r.IntN(0xfff0)), Data: g.bytes()}
}

func (g gen) commit() *Commit {
	c := &Commit{}
	for range g.r.IntN(4) {
		if g.r.IntN(2) == 0 {
			c.Proposals = append(c.Proposals, ProposalOrRef{Proposal: g.proposal()})
		} else {
			c.Proposals = append(c.Proposals, ProposalOrRef{Reference: g.bytes()})
		}
	}
	if g.r.IntN(2) == 0 {
		c.Path = &UpdatePath{LeafNode: *g.leafNode()}
		for range g.r.IntN(3) {
			n := UpdatePathNode{EncryptionKey: g.bytes()}
			for range g.r.IntN(3) {
				n.EncryptedPathSecret = append(n.EncryptedPathSecret, HPKECiphertext{KEMOutput: g.bytes(), Ciphertext: g.bytes()})
			}
			c.Path.Nodes = append(c.Path.Nodes, n)
		}
	}
	return c
}

func (g gen) groupContext() GroupContext {
	return GroupContext{Version: 1, CipherSuite: 1, GroupID: g.bytes(), Epoch: g.r.Uint64(),
		TreeHash: g.bytes(), ConfirmedTranscriptHash: g.bytes(), Extensions: g.extensions()}
}

func (g gen) tree() *RatchetTree {
	leaves := 1 << g.r.IntN(4)
	t := &RatchetTree{nodes: make([]Node, 2*leaves-1)}
	for x := range t.nodes {
		if g.r.IntN(3) == 0 {
			continue
		}
		if x%2 == 0 {
			t.nodes[x].Leaf = g.leafNode()
		} else {
			t.nodes[x].Parent = &ParentNode{EncryptionKey: g.bytes(), ParentHash: g.bytes()}
			for range g.r.IntN(3) {
				t.nodes[x].Parent.UnmergedLeaves = append(t.nodes[x].Parent.UnmergedLeaves, g.r.Uint32())
			}
		}
	}
	if t.nodes[len(t.nodes)-1].Blank() {
		t.nodes[len(t.nodes)-1].Leaf = g.leafNode()
	}
	return t
}

func (g gen) message() *MLSMessage {
	m := &MLSMessage{Version: 1, WireFormat: WireFormat(1 + g.r.IntN(5))}
	switch m.WireFormat {
	case WireFormatPublicMessage:
		fc := FramedContent{GroupID: g.bytes(), Epoch: g.r.Uint64(), AuthenticatedData: g.bytes(),
			Sender: Sender{Type: SenderType(1 + g.r.IntN(4))}}
		if fc.Sender.Type <= SenderTypeExternal {
			fc.Sender.Index = g.r.Uint32()
		}
		pm := &PublicMessage{Auth: FramedContentAuthData{Signature: g.bytes()}}
		switch g.r.IntN(3) {
		case 0:
			fc.ContentType, fc.ApplicationData = ContentTypeApplication, g.bytes()
		case 1:
			fc.ContentType, fc.Proposal = ContentTypeProposal, g.proposal()
		default:
			fc.ContentType, fc.Commit = ContentTypeCommit, g.commit()
			pm.Auth.ConfirmationTag = g.bytes()
		}
		pm.Content = fc
		if fc.Sender.Type == SenderTypeMember {
			pm.MembershipTag = g.bytes()
		}
		m.PublicMessage = pm
	case WireFormatPrivateMessage:
		m.PrivateMessage = &PrivateMessage{GroupID: g.bytes(), Epoch: g.r.Uint64(), ContentType: ContentType(1 + g.r.IntN(3)),
			AuthenticatedData: g.bytes(), EncryptedSenderData: g.bytes(), Ciphertext: g.bytes()}
	case WireFormatWelcome:
		w := &Welcome{CipherSuite: 1, EncryptedGroupInfo: g.bytes()}
		for range g.r.IntN(3) {
			w.Secrets = append(w.Secrets, EncryptedGroupSecrets{NewMember: g.bytes(),
				EncryptedGroupSecrets: HPKECiphertext{KEMOutput: g.bytes(), Ciphertext: g.bytes()}})
		}
		m.Welcome = w
	case WireFormatGroupInfo:
		m.GroupInfo = &GroupInfo{GroupContext: g.groupContext(), Extensions: g.extensions(),
			ConfirmationTag: g.bytes(), Signer: g.r.Uint32(), Signature: g.bytes()}
	case WireFormatKeyPackage:
		m.KeyPackage = g.keyPackage()
	}
	return m
}

// TestMarshalUnmarshalRandom encodes random structures, decodes them and
// compares both the values and the re-encoding.
func TestMarshalUnmarshalRandom(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(1, 2))}
	opts := []cmp.Option{cmp.AllowUnexported(RatchetTree{}), cmpopts.IgnoreFields(RatchetTree{}, "hashes"), cmpopts.EquateEmpty()}
	for i := range 250 {
		var in, out codec
		switch i % 5 {
		case 0:
			in, out = g.message(), new(MLSMessage)
		case 1:
			in, out = g.commit(), new(Commit)
		case 2:
			in, out = g.tree(), new(RatchetTree)
		case 3:
			gs := &GroupSecrets{JoinerSecret: g.bytes()}
			if g.r.IntN(2) == 0 {
				gs.PathSecret = &PathSecret{PathSecret: g.bytes()}
			}
			for range g.r.IntN(3) {
				gs.PSKs = append(gs.PSKs, g.psk())
			}
			in, out = gs, new(GroupSecrets)
		case 4:
			gc := g.groupContext()
			in, out = &gc, new(GroupContext)
		}
		enc := encode(in)
		if err := decodeAll(enc, out, "random"); err != nil {
			t.Fatalf("%d: %T: %v", i, in, err)
		}
		if d := cmp.Diff(in, out, opts...); d != "" {
			t.Fatalf("%d: %T differs after a round trip (-in +out):\n%s", i, in, d)
		}
		if !bytes.Equal(encode(out), enc) {
			t.Fatalf("%d: %T re-encodes differently", i, in)
		}
	}
}
