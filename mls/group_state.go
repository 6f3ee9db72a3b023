package mls

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"slices"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/secrettree"
	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// State is a Group serialised in two parts that can be stored apart (the
// ratchet tree is large and public; everything else is small and secret):
//
//   - Tree is the ratchet tree in the RFC 9420 encoding of the ratchet_tree
//     extension (Section 12.4.3.3).
//   - Secrets is this package's own encoding of the rest: GroupContext,
//     transcript hashes, our leaf and private keys, the epoch's secrets,
//     the secret tree with its ratchet positions and skipped keys, the
//     proposals received in the epoch, the resumption PSKs of recent
//     epochs, the receive-only keys of past epochs and the group's flags. It must be
//     stored encrypted, and a stored state must be replaced, never kept
//     alongside a newer one: restoring an old state would reuse key
//     generations (RFC 9420, Section 6.3.1 explains the reuse guard that
//     limits the damage).
//
// Only what RFC 9420 Section 9.2 lets us keep is in Secrets: consumed
// secrets (joiner, epoch, commit and encryption secrets, used ratchet keys)
// were deleted before, so they are not in the state either.
//
// The Secrets encoding starts with a version byte; restoring rejects any
// other version, trailing bytes and values of the wrong size.
type State struct {
	Tree    []byte
	Secrets []byte
}

// stateVersion is the first byte of State.Secrets.
const stateVersion = 1

// stateSecrets names State.Secrets in the *ParseError of a restore.
const stateSecrets = "State.Secrets"

// State serialises the group exactly (see State), holding only the secrets
// RFC 9420, Section 9.2 lets a member keep. It returns the group's sticky
// error instead of saving an inconsistent group.
func (g *Group) State() (_ *State, err error) {
	defer g.recoverSticky(&err)
	if g.err != nil {
		return nil, g.err
	}
	secretTree, err := g.protector.secrets.MarshalBinary()
	if err != nil {
		return nil, err
	}
	var b cryptobyte.Builder
	b.AddUint8(stateVersion)
	g.ctx.marshal(&b)
	addOpaque(&b, g.interim)
	addOpaque(&b, g.confirmationTag)
	b.AddUint32(uint32(g.self))
	addOpaque(&b, g.sigPriv.Seed())
	g.marshalNodeKeys(&b)
	marshalEpoch(&b, g.epoch)
	addOpaque(&b, secretTree)
	g.marshalProposals(&b)
	g.marshalPendingUpdate(&b)
	addOptional(&b, g.reinit != nil, func(b *cryptobyte.Builder) { g.reinit.marshalBody(b) })
	addBool(&b, g.removed)
	g.marshalResumption(&b)
	if err := g.marshalPast(&b); err != nil {
		return nil, err
	}
	secrets, err := b.Bytes()
	if err != nil {
		return nil, err
	}
	return &State{Tree: g.tree.Marshal(), Secrets: secrets}, nil
}

func addBool(b *cryptobyte.Builder, v bool) {
	if v {
		b.AddUint8(1)
	} else {
		b.AddUint8(0)
	}
}

func readBool(d *decoder, field string, v *bool) bool { return d.optional(field, v) }

func (g *Group) marshalNodeKeys(b *cryptobyte.Builder) {
	nodes := make([]tm.NodeIndex, 0, len(g.nodeKeys))
	for x := range g.nodeKeys {
		nodes = append(nodes, x)
	}
	slices.Sort(nodes)
	addVector(b, func(b *cryptobyte.Builder) {
		for _, x := range nodes {
			b.AddUint32(uint32(x))
			addOpaque(b, g.nodeKeys[x])
		}
	})
}

// epochFields lists the stored secrets of a schedule.Epoch, in order.
func epochFields(e *schedule.Epoch) []*[]byte {
	return []*[]byte{&e.SenderDataSecret, &e.ExporterSecret, &e.ExternalSecret, &e.ConfirmationKey,
		&e.MembershipKey, &e.ResumptionPSK, &e.EpochAuthenticator, &e.InitSecret}
}

func marshalEpoch(b *cryptobyte.Builder, e *schedule.Epoch) {
	for _, f := range epochFields(e) {
		addOpaque(b, *f)
	}
}

func (g *Group) marshalProposals(b *cryptobyte.Builder) {
	addVector(b, func(b *cryptobyte.Builder) {
		for i := range g.proposals {
			p := &g.proposals[i]
			addOpaque(b, p.ref)
			p.sender.marshal(b)
			marshalProposal(b, p.proposal)
		}
	})
}

// marshalResumption writes the resumption PSKs of past epochs, by epoch.
func (g *Group) marshalResumption(b *cryptobyte.Builder) {
	epochs := make([]uint64, 0, len(g.resumption))
	for e := range g.resumption {
		epochs = append(epochs, e)
	}
	slices.Sort(epochs)
	addVector(b, func(b *cryptobyte.Builder) {
		for _, e := range epochs {
			b.AddUint64(e)
			addOpaque(b, g.resumption[e])
		}
	})
}

func (g *Group) unmarshalResumption(d *decoder) bool {
	g.resumption = nil
	first := true
	var prev uint64
	return d.vector("resumption_psks", func(d *decoder) bool {
		var e uint64
		var psk []byte
		if !d.u64("epoch", &e) {
			return false
		}
		if !first && e <= prev {
			return d.reject("epoch", "%d not after %d", e, prev)
		}
		if !readSecret(d, "psk", &psk, suite.HashSize) {
			return false
		}
		if g.resumption == nil {
			g.resumption = map[uint64][]byte{}
		}
		first, prev = false, e
		g.resumption[e] = psk
		return true
	})
}

// readSecret reads opaque field<V> into out and checks it is size bytes.
func readSecret(d *decoder, field string, out *[]byte, size int) bool {
	if !d.opaque(field, out) {
		return false
	}
	return len(*out) == size || d.reject(field, "%d bytes, want %d", len(*out), size)
}

func (g *Group) marshalPendingUpdate(b *cryptobyte.Builder) {
	keys := make([]string, 0, len(g.pendingUpdate))
	for k := range g.pendingUpdate {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	addVector(b, func(b *cryptobyte.Builder) {
		for _, k := range keys {
			addOpaque(b, []byte(k))
			addOpaque(b, g.pendingUpdate[k])
		}
	})
}

// RestoreGroup rebuilds a Group from a State produced by Group.State, with
// cfg as its configuration (cfg is not part of the state). Storing a group
// is this package's, not part of RFC 9420. The tree must be the one stored
// with the secrets: its tree hash (RFC 9420, Section 7.8) is checked
// against the GroupContext, and the stored private keys against the tree's
// public keys. Errors wrap ErrMalformed for bytes that do not decode (a
// *ParseError of "State.Secrets" naming the field that failed).
func RestoreGroup(cfg *Config, st *State) (_ *Group, err error) {
	defer recoverInput(&err)
	if cfg == nil {
		cfg = &Config{}
	}
	tree, err := ParseRatchetTree(st.Tree)
	if err != nil {
		return nil, err
	}
	g := &Group{config: *cfg, tree: tree, ctx: new(GroupContext), epoch: new(schedule.Epoch)}
	secretTree, err := g.unmarshalSecrets(st.Secrets)
	if err != nil {
		return nil, err
	}
	if err := g.checkRestored(); err != nil {
		return nil, err
	}
	sec := secrettree.Tree{Window: cfg.window()}
	if err := sec.UnmarshalBinary(secretTree); err != nil {
		return nil, errorf(stateSecrets, "secret_tree: %v", err)
	}
	if sec.Leaves() != tree.NumLeaves() {
		return nil, errorf(stateSecrets, "secret_tree has %d leaves, the ratchet tree %d", sec.Leaves(), tree.NumLeaves())
	}
	g.protector = &Protector{
		ctx:              g.ctx.clone(),
		senderDataSecret: bytes.Clone(g.epoch.SenderDataSecret),
		membershipKey:    bytes.Clone(g.epoch.MembershipKey),
		secrets:          &sec,
		Rand:             cfg.Rand,
		PaddingBlock:     cfg.PaddingBlock,
	}
	return g, nil
}

// unmarshalSecrets decodes State.Secrets into g and returns the encoded
// secret tree.
func (g *Group) unmarshalSecrets(data []byte) ([]byte, error) {
	d := newDecoder(data)
	var version uint8
	var seed, secretTree []byte
	var self uint32
	var hasReInit bool
	if !d.u8("version", &version) {
		return nil, d.err(stateSecrets)
	}
	if version != stateVersion {
		d.reject("version", "unknown version %d", version)
		return nil, d.err(stateSecrets)
	}
	ok := d.sub("group_context", g.ctx.unmarshal) && d.opaque("interim_transcript_hash", &g.interim) &&
		d.opaque("confirmation_tag", &g.confirmationTag) && d.u32("own_leaf", &self) &&
		readSecret(&d, "signature_seed", &seed, ed25519.SeedSize) &&
		g.unmarshalNodeKeys(&d) && unmarshalEpoch(&d, g.epoch) && d.opaque("secret_tree", &secretTree) &&
		g.unmarshalProposals(&d) && g.unmarshalPendingUpdate(&d) && d.optional("reinit", &hasReInit)
	if ok && hasReInit {
		var p Proposal
		ok = d.sub("reinit", func(d *decoder) bool { return readProposalBody(d, ProposalTypeReInit, &p) })
		g.reinit, _ = p.(*ReInitProposal)
	}
	if !ok || !readBool(&d, "removed", &g.removed) || !g.unmarshalResumption(&d) || !g.unmarshalPast(&d) {
		return nil, d.err(stateSecrets)
	}
	if !d.s.Empty() {
		return nil, &ParseError{Struct: stateSecrets, Offset: d.offset(), Err: fmt.Errorf("%d trailing bytes", len(d.s))}
	}
	g.self = tm.LeafIndex(self)
	g.sigPriv = ed25519.NewKeyFromSeed(seed)
	return secretTree, nil
}

func (g *Group) unmarshalNodeKeys(d *decoder) bool {
	g.nodeKeys = map[tm.NodeIndex][]byte{}
	prev := int64(-1)
	return d.vector("node_keys", func(d *decoder) bool {
		var x uint32
		var k []byte
		if !d.u32("node", &x) {
			return false
		}
		if int64(x) <= prev {
			return d.reject("node", "%d not after %d", x, prev)
		}
		if !readSecret(d, "private_key", &k, suite.HPKEKeySize) {
			return false
		}
		prev = int64(x)
		g.nodeKeys[tm.NodeIndex(x)] = k
		return true
	})
}

func unmarshalEpoch(d *decoder, e *schedule.Epoch) bool {
	return d.sub("epoch_secrets", func(d *decoder) bool {
		for _, f := range epochFields(e) {
			if !readSecret(d, "", f, suite.HashSize) {
				return false
			}
		}
		return true
	})
}

func (g *Group) unmarshalProposals(d *decoder) bool {
	g.proposals = nil
	return d.vector("proposals", func(d *decoder) bool {
		var p cachedProposal
		if !d.opaque("ref", &p.ref) || !d.sub("sender", p.sender.unmarshal) ||
			!d.sub("proposal", func(d *decoder) bool { return readProposal(d, &p.proposal) }) {
			return false
		}
		g.proposals = append(g.proposals, p)
		return true
	})
}

func (g *Group) unmarshalPendingUpdate(d *decoder) bool {
	g.pendingUpdate = nil
	prev := ""
	return d.vector("pending_update", func(d *decoder) bool {
		var pub, priv []byte
		if !d.opaque("public_key", &pub) {
			return false
		}
		if g.pendingUpdate != nil && string(pub) <= prev {
			return d.reject("public_key", "not in increasing order")
		}
		if !d.opaque("private_key", &priv) {
			return false
		}
		if g.pendingUpdate == nil {
			g.pendingUpdate = map[string][]byte{}
		}
		prev = string(pub)
		g.pendingUpdate[prev] = priv
		return true
	})
}

// checkRestored checks that the restored secrets fit the tree: the tree
// hash matches the GroupContext, our leaf exists and holds our signature
// key, and every private node key matches the public key in the tree.
func (g *Group) checkRestored() error {
	if !bytes.Equal(g.tree.TreeHash(), g.ctx.TreeHash) {
		return fmt.Errorf("%w: ratchet tree does not match the stored GroupContext", ErrInvalidTree)
	}
	if g.removed {
		return nil
	}
	leaf := g.tree.Leaf(uint32(g.self))
	if leaf == nil || !bytes.Equal(leaf.SignatureKey, suite.SignaturePublicKey(g.sigPriv)) {
		return fmt.Errorf("%w: our leaf %d does not hold our signature key", ErrInvalidTree, g.self)
	}
	for x, priv := range g.nodeKeys {
		pub, err := suite.PublicKey(priv)
		if err != nil || uint32(x) >= uint32(2*g.tree.NumLeaves()-1) || !bytes.Equal(g.tree.node(x).encryptionKey(), pub) {
			return fmt.Errorf("%w: stored private key of node %d does not match the tree", ErrInvalidTree, x)
		}
	}
	return nil
}
