package mls

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"

	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/secrettree"
	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// Join joins a group from a Welcome (RFC 9420, Section 12.4.3.1) as the
// member whose KeyPackage is kp, with the private keys priv generated with
// it. tree is the group's ratchet tree obtained out of band, or nil when the
// Welcome's GroupInfo carries it in a ratchet_tree extension (Section
// 12.4.3.3). cfg.PSKs supplies any pre-shared keys the Welcome names.
//
// Join validates the tree as RFC 9420 requires (tree hash, parent hashes,
// every LeafNode's signature and capabilities, unmerged leaves, unique
// keys) but does not check the lifetimes of leaves already in the tree
// (they may have expired since they were added, which is legal). Verifying
// that the group ID is unique among the caller's groups is left to the
// caller.
//
// Errors: ErrNotForUs, ErrDecryption, ErrMissingPSK, ErrInvalidWelcome,
// ErrInvalidTree, ErrInvalidSignature, ErrUnsupportedCipherSuite, or a
// *ParseError for malformed decrypted content.
func Join(cfg *Config, w *Welcome, kp *KeyPackage, priv *KeyPackagePrivate, tree *RatchetTree) (_ *Group, err error) {
	defer recoverInput(&err)
	return join(cfg, w, kp, joinKeys{initPriv: priv.InitPriv, encryptionPriv: priv.EncryptionPriv, sigPriv: priv.SignaturePriv}, tree)
}

// joinKeys are the private keys of the KeyPackage a Welcome is for.
type joinKeys struct {
	initPriv, encryptionPriv []byte
	sigPriv                  ed25519.PrivateKey
}

// join implements joining by Welcome (RFC 9420, Section 12.4.3.1) for the
// KeyPackage kp whose private keys are keys. tree is the ratchet tree
// obtained out of band, or nil if the GroupInfo carries a ratchet_tree
// extension. Leaves already in the tree are not checked for lifetime (see
// LifetimePolicy); the tree is otherwise fully validated.
func join(cfg *Config, w *Welcome, kp *KeyPackage, keys joinKeys, tree *RatchetTree) (*Group, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	opened, err := OpenWelcome(w, kp, keys.initPriv, cfg.PSKs)
	if err != nil {
		return nil, err
	}
	gi := opened.GroupInfo
	if tree, err = verifyGroupInfo(cfg, gi, tree); err != nil {
		return nil, err
	}
	if err := checkResumptionEpoch(opened.Secrets.PSKs, gi.GroupContext.Epoch); err != nil {
		return nil, err
	}
	self, nodeKeys, err := joinerKeys(tree, kp, keys, tm.LeafIndex(gi.Signer), opened.Secrets.PathSecret)
	if err != nil {
		return nil, err
	}
	g := &Group{
		config:          *cfg,
		ctx:             gi.GroupContext.clone(),
		tree:            tree,
		interim:         schedule.InterimTranscriptHash(gi.GroupContext.ConfirmedTranscriptHash, gi.ConfirmationTag),
		confirmationTag: bytes.Clone(gi.ConfirmationTag),
		self:            self,
		sigPriv:         keys.sigPriv,
		nodeKeys:        nodeKeys,
	}
	if err := g.installEpoch(opened.epoch); err != nil {
		return nil, err
	}
	return g, nil
}

// verifyGroupInfo checks a GroupInfo and the ratchet tree it describes, for
// a Welcome or an external join (RFC 9420, Section 12.4.3.1): the tree
// (outOfBand, or else the ratchet_tree extension) matches the tree hash,
// the signer's leaf is not blank and its signature verifies, the tree is
// valid and the GroupContext extensions are well formed. It returns the
// tree.
func verifyGroupInfo(cfg *Config, gi *GroupInfo, outOfBand *RatchetTree) (*RatchetTree, error) {
	ctx := &gi.GroupContext
	tree, err := welcomeTree(gi, outOfBand)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(tree.TreeHash(), ctx.TreeHash) {
		return nil, fmt.Errorf("%w: ratchet tree does not match the GroupInfo's tree_hash", ErrInvalidWelcome)
	}
	signer := tree.Leaf(gi.Signer)
	if signer == nil {
		return nil, fmt.Errorf("%w: GroupInfo signer %d is a blank leaf", ErrInvalidWelcome, gi.Signer)
	}
	if err := gi.Verify(signer.SignatureKey); err != nil {
		return nil, err
	}
	if err := tree.validate(ctx.GroupID, ctx.Extensions, cfg.credential()); err != nil {
		return nil, err
	}
	if err := validateGroupContextExtensions(ctx.Extensions); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidWelcome, err)
	}
	return tree, nil
}

// joinerKeys finds our leaf (the one identical to our KeyPackage's
// LeafNode), checks our private keys against it and returns the private
// keys we hold: our leaf's and, with a path secret, those of the
// committer's path above our common ancestor (RFC 9420, Section 12.4.3.1).
func joinerKeys(tree *RatchetTree, kp *KeyPackage, keys joinKeys, signer tm.LeafIndex, ps *PathSecret) (tm.LeafIndex, map[tm.NodeIndex][]byte, error) {
	self, ok := tree.findLeaf(&kp.LeafNode)
	if !ok {
		return 0, nil, fmt.Errorf("%w: no leaf holds our KeyPackage's LeafNode", ErrInvalidWelcome)
	}
	if pub, err := suite.PublicKey(keys.encryptionPriv); err != nil || !bytes.Equal(pub, kp.LeafNode.EncryptionKey) {
		return 0, nil, errors.New("mls: encryption private key does not match the KeyPackage")
	}
	if !bytes.Equal(suite.SignaturePublicKey(keys.sigPriv), kp.LeafNode.SignatureKey) {
		return 0, nil, errors.New("mls: signature private key does not match the KeyPackage")
	}
	nodeKeys := map[tm.NodeIndex][]byte{self.Node(): bytes.Clone(keys.encryptionPriv)}
	if ps == nil {
		return self, nodeKeys, nil
	}
	path, err := joinPathKeys(tree, self, signer, ps.PathSecret)
	if err != nil {
		return 0, nil, err
	}
	maps.Copy(nodeKeys, path)
	return self, nodeKeys, nil
}

// welcomeTree returns the ratchet tree to join with: the out-of-band tree
// if given, else the GroupInfo's ratchet_tree extension (RFC 9420, Section
// 12.4.3.3).
func welcomeTree(gi *GroupInfo, outOfBand *RatchetTree) (*RatchetTree, error) {
	ext := findExtension(gi.Extensions, ExtensionTypeRatchetTree)
	switch {
	case outOfBand != nil:
		return outOfBand.deepClone(), nil
	case ext == nil:
		return nil, fmt.Errorf("%w: no ratchet_tree extension and no tree given", ErrInvalidWelcome)
	}
	return ParseRatchetTree(ext.Data)
}

// checkResumptionEpoch enforces RFC 9420, Section 12.4.3.1: a group joined
// with a reinit or branch resumption PSK must be at epoch 1.
func checkResumptionEpoch(psks []PreSharedKeyID, epoch uint64) error {
	for _, id := range psks {
		if id.Type == PSKTypeResumption && (id.Usage == ResumptionPSKUsageReInit || id.Usage == ResumptionPSKUsageBranch) && epoch != 1 {
			return fmt.Errorf("%w: %s resumption PSK in a group at epoch %d, want 1", ErrInvalidWelcome, describePSK(&id), epoch)
		}
	}
	return nil
}

// installEpoch makes e the group's current epoch: it seeds a new Protector
// with the encryption secret (which the key schedule then forgets, RFC 9420
// Section 9.2) for the current GroupContext and tree size.
func (g *Group) installEpoch(e *schedule.Epoch) error {
	p, err := NewProtector(g.ctx, e.EncryptionSecret, e.SenderDataSecret, e.MembershipKey, g.tree.NumLeaves())
	if err != nil {
		return err
	}
	p.Rand = g.config.Rand
	p.PaddingBlock = g.config.PaddingBlock
	p.secrets.Window = g.config.window()
	e.ForgetEncryptionSecret()
	g.epoch, g.protector = e, p
	return nil
}

// window is the out-of-order policy of Config (RFC 9420, Section 15.3).
func (c *Config) window() secrettree.Window {
	return secrettree.Window{MaxForward: c.MaxForwardGenerations, MaxRetained: c.MaxSkippedKeys}
}

// recoverInput turns a panic while processing untrusted input outside any
// group (a Welcome, a GroupInfo, a stored state) into an error, so that a
// daemon does not crash on one message: an *InternalError with the panic's
// stack. Use as: defer recoverInput(&err).
func recoverInput(err *error) {
	if r := recover(); r != nil {
		*err = newInternalError("processing input outside a group", r)
	}
}
