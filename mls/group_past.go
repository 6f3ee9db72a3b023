package mls

import (
	"bytes"
	"slices"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/secrettree"
	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// Late application messages (RFC 9420, Section 15.3). A member may send an
// application message in epoch n before it sees the Commit to n+1; a device
// that drains its queue after the Commit would otherwise lose it. A group
// therefore keeps, for Config.PastEpochs epochs, what it needs to decrypt
// and verify application messages of the epochs it left: the GroupContext,
// the sender-data secret, the secret tree (with its deletion schedule) and
// the members' signature keys. Handshake messages of past epochs are still
// refused, and nothing is ever sent with these keys.

// pastEpoch holds the receive-only keys of an epoch the group has left.
type pastEpoch struct {
	protector *Protector
	signers   map[uint32][]byte // signature key of each member's leaf
}

// DefaultPastEpochs is how many past epochs a group keeps keys for when
// Config.PastEpochs is zero (RFC 9420, Section 15.3 leaves the number to
// the application).
const DefaultPastEpochs = 1

func (c *Config) pastEpochs() int {
	switch {
	case c == nil || c.PastEpochs == 0:
		return DefaultPastEpochs
	case c.PastEpochs < 0:
		return 0
	}
	return c.PastEpochs
}

// carryPast gives g, the group of a new epoch, the receive-only keys of
// old's epoch and of the past epochs old kept, newest first, up to the
// configured number; older ones are dropped (RFC 9420, Section 9.2).
func (g *Group) carryPast(old *Group) {
	n := g.config.pastEpochs()
	if n == 0 {
		g.past = nil
		return
	}
	past := append([]*pastEpoch{old.retire()}, old.past...)
	g.past = past[:min(n, len(past))]
}

// retire returns the receive-only keys of g's current epoch. It shares
// g's secret tree (until a Commit is merged, g may still decrypt with it)
// and leaves out the membership key, which only PublicMessages need.
func (g *Group) retire() *pastEpoch {
	signers := map[uint32][]byte{}
	for _, l := range g.tree.members() {
		signers[uint32(l)] = g.tree.leaf(l).SignatureKey
	}
	p := g.protector
	return &pastEpoch{
		protector: &Protector{ctx: p.ctx, senderDataSecret: p.senderDataSecret, secrets: p.secrets, Rand: p.Rand, PaddingBlock: p.PaddingBlock},
		signers:   signers,
	}
}

func (p *pastEpoch) signer(leaf uint32) ([]byte, error) {
	if k, ok := p.signers[leaf]; ok {
		return k, nil
	}
	return nil, ErrUnknownSender
}

// openPast decrypts an application PrivateMessage of a past epoch the
// group still has keys for. Other messages of past epochs fail with
// ErrEpochMismatch.
func (g *Group) openPast(pm *PrivateMessage) (*AuthenticatedContent, error) {
	if pm.ContentType != ContentTypeApplication || !bytes.Equal(pm.GroupID, g.ctx.GroupID) {
		return nil, ErrEpochMismatch
	}
	for _, p := range g.past {
		if p.protector.ctx.Epoch == pm.Epoch {
			return p.protector.UnprotectPrivate(pm, p.signer)
		}
	}
	return nil, ErrEpochMismatch
}

// marshalPast writes the past epochs for Group.State.
func (g *Group) marshalPast(b *cryptobyte.Builder) error {
	var err error
	addVector(b, func(b *cryptobyte.Builder) {
		for _, p := range g.past {
			p.protector.ctx.marshal(b)
			addOpaque(b, p.protector.senderDataSecret)
			tree, e := p.protector.secrets.MarshalBinary()
			if e != nil {
				err = e
			}
			addOpaque(b, tree)
			leaves := make([]uint32, 0, len(p.signers))
			for l := range p.signers {
				leaves = append(leaves, l)
			}
			slices.Sort(leaves)
			addVector(b, func(b *cryptobyte.Builder) {
				for _, l := range leaves {
					b.AddUint32(l)
					addOpaque(b, p.signers[l])
				}
			})
		}
	})
	return err
}

// unmarshalPast reads the past epochs written by marshalPast: epochs of
// this group, older than the current one, newest first.
func (g *Group) unmarshalPast(d *decoder) bool {
	g.past = nil
	next := g.ctx.Epoch
	return d.vector("past_epochs", func(d *decoder) bool {
		start := d.offset()
		p, ok := g.unmarshalPastEpoch(d)
		switch {
		case !ok:
			return false
		case p.protector.ctx.Epoch >= next:
			return d.failAt(start, "group_context.epoch", "%d not before %d", p.protector.ctx.Epoch, next)
		case !bytes.Equal(p.protector.ctx.GroupID, g.ctx.GroupID):
			return d.failAt(start, "group_context.group_id", "not this group's")
		}
		next = p.protector.ctx.Epoch
		g.past = append(g.past, p)
		return true
	})
}

func (g *Group) unmarshalPastEpoch(d *decoder) (*pastEpoch, bool) {
	prot := &Protector{ctx: new(GroupContext), Rand: g.config.Rand, PaddingBlock: g.config.PaddingBlock}
	var tree []byte
	if !d.sub("group_context", prot.ctx.unmarshal) ||
		!readSecret(d, "sender_data_secret", &prot.senderDataSecret, suite.HashSize) ||
		!d.opaque("secret_tree", &tree) {
		return nil, false
	}
	prot.secrets = &secrettree.Tree{Window: g.config.window()}
	if err := prot.secrets.UnmarshalBinary(tree); err != nil {
		return nil, d.reject("secret_tree", "%v", err)
	}
	p := &pastEpoch{protector: prot, signers: map[uint32][]byte{}}
	prev := int64(-1)
	ok := d.vector("signers", func(d *decoder) bool {
		var l uint32
		var key []byte
		if !d.u32("leaf", &l) {
			return false
		}
		if int64(l) <= prev {
			return d.reject("leaf", "%d not after %d", l, prev)
		}
		if !d.opaque("signature_key", &key) {
			return false
		}
		prev = int64(l)
		p.signers[l] = key
		return true
	})
	return p, ok
}
