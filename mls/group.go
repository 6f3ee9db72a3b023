package mls

import (
	"bytes"
	"crypto/ed25519"
	cryptorand "crypto/rand"
	"fmt"
	"io"
	"time"

	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// Config configures KeyPackage generation and Groups. The zero value is
// usable; a Config must not be changed after it was passed in. Config is
// this package's, not an RFC 9420 structure; each field names the section
// whose choice it makes.
type Config struct {
	// Rand is the source of randomness for keys, path secrets, nonces and
	// reuse guards; nil means crypto/rand. (HPKE encapsulation always uses
	// crypto/rand: crypto/hpke takes no reader.)
	Rand io.Reader
	// Time returns the current time for lifetime checks; nil means
	// time.Now.
	Time func() time.Time
	// MaxLifetime is the longest LeafNode lifetime accepted in a
	// KeyPackage being added; zero means no limit (RFC 9420, Section 7.2;
	// see LifetimePolicy for why).
	MaxLifetime time.Duration
	// KeyPackageLifetime is the validity of KeyPackages we generate,
	// starting KeyPackageClockSkew (an hour) before now, for peers whose
	// clocks lag; zero means DefaultKeyPackageLifetime (27 days).
	KeyPackageLifetime time.Duration
	// PSKs looks up external pre-shared keys and resumption PSKs of other
	// groups; nil means none are available.
	PSKs PSKLookup
	// ValidateCredential is the Authentication Service (RFC 9420, Section
	// 5.3.1): it is called for every credential entering the group, with
	// the signature key it must be bound to. Nil accepts every credential.
	ValidateCredential func(c Credential, signatureKey []byte) error
	// ValidateSuccessor is the Authentication Service's check that a
	// member's new credential, in an Update proposal or in the LeafNode of
	// the member's Commit's UpdatePath, is a valid successor of the
	// credential it replaces (RFC 9420, Section 5.3.1). It is called after
	// ValidateCredential accepted the new credential, whether or not the
	// credential changed. Nil accepts every successor.
	ValidateSuccessor func(old, new Credential) error
	// PaddingBlock pads PrivateMessage contents to a multiple of this many
	// bytes (RFC 9420, Section 6.3.1); zero means no padding.
	PaddingBlock int

	// MaxForwardGenerations is how many generations past the next expected
	// one a receiver derives for an out-of-order PrivateMessage (RFC 9420,
	// Section 15.3); zero means 1024.
	MaxForwardGenerations uint32
	// MaxSkippedKeys is how many skipped message keys are kept per sender
	// ratchet for messages that arrive out of order (RFC 9420, Section
	// 15.3); zero means 64, negative means none.
	MaxSkippedKeys int
	// PastEpochs is how many epochs the group keeps receive-only keys for
	// after it moves on, to decrypt application messages sent before a
	// Commit but delivered after it (RFC 9420, Section 15.3); zero means
	// 1, negative means none.
	PastEpochs int

	// skipLifetime disables lifetime checks (for KeyPackages in Commits
	// made by others).
	skipLifetime bool
}

func (c *Config) rand() io.Reader {
	if c == nil || c.Rand == nil {
		return cryptorand.Reader
	}
	return c.Rand
}

func (c *Config) now() time.Time {
	if c == nil || c.Time == nil {
		return time.Now()
	}
	return c.Time()
}

// lifetime is the policy for KeyPackages entering the group.
func (c *Config) lifetime() *LifetimePolicy {
	p := &LifetimePolicy{Time: c.now}
	if c != nil {
		p.MaxLifetime, p.Skip = c.MaxLifetime, c.skipLifetime
	}
	return p
}

func (c *Config) credential() func(Credential, []byte) error {
	if c == nil {
		return nil
	}
	return c.ValidateCredential
}

func (c *Config) successor() func(old, new Credential) error {
	if c == nil {
		return nil
	}
	return c.ValidateSuccessor
}

// A Group is one client's state in an MLS group (RFC 9420, Sections 8, 11
// and 12): the public ratchet tree and GroupContext, the client's leaf and
// private keys, the current epoch's key schedule and message protection,
// and the proposals received in the epoch.
//
// Commits are created and processed in group_commit.go, Welcomes and
// external joins in group_welcome.go and group_join.go, application
// messages in group_message.go, and the state is saved and restored in
// group_state.go.
//
// A Group is not safe for concurrent use. Once an operation leaves the
// state inconsistent, every later call returns that first error (sticky).
type Group struct {
	config Config

	// Public state of the epoch.
	ctx  *GroupContext
	tree *RatchetTree
	// interim is the interim transcript hash; confirmationTag is the tag of
	// the Commit (or group creation) that started the epoch (RFC 9420,
	// Section 8.2), needed for GroupInfo.
	interim         []byte
	confirmationTag []byte

	// This client.
	self    tm.LeafIndex
	sigPriv ed25519.PrivateKey
	// nodeKeys holds the HPKE private keys this client knows, by node:
	// its own leaf and parents on its direct path (RFC 9420, Section 4.1.1).
	nodeKeys map[tm.NodeIndex][]byte

	// Secrets of the epoch: the key schedule (encryption_secret already
	// handed to protector) and message protection.
	epoch     *schedule.Epoch
	protector *Protector

	// proposals are the proposals received (or sent) in this epoch, for
	// Commits that include them by reference.
	proposals []cachedProposal
	// pendingUpdate maps the encryption key of each of our Updates to its
	// private key, followed for a Rotation by the new Ed25519 seed.
	pendingUpdate map[string][]byte

	// reinit is set once a Commit with a ReInit proposal was applied: the
	// group must not send any more (RFC 9420, Section 12.4.2).
	reinit *ReInitProposal
	// removed is set once a Commit removed this client.
	removed bool

	// resumption holds the resumption_psk of recent past epochs, by epoch,
	// for resumption PSKs naming this group (RFC 9420, Section 8.6); at
	// most keepResumption entries.
	resumption map[uint64][]byte

	// past holds receive-only keys of recent epochs, newest first, for
	// application messages that arrive after the next Commit (RFC 9420,
	// Section 15.3; see group_past.go).
	past []*pastEpoch

	err error // sticky
}

// cachedProposal is a proposal received in the current epoch with its
// ProposalRef (RFC 9420, Section 5.2) and sender.
type cachedProposal struct {
	ref      []byte
	proposal Proposal
	sender   Sender
}

// recoverSticky turns a panic during an operation on g into g's sticky
// error, an *InternalError with the panic's stack, returned through *err.
// A panic means input reached a state the code did not expect; the
// group's state, though not changed (operations build the next state aside
// and swap it in last), can no longer be trusted, and a daemon fed
// untrusted messages must not crash on one. Use as: defer
// g.recoverSticky(&err).
func (g *Group) recoverSticky(err *error) {
	if r := recover(); r != nil {
		if g.err == nil {
			g.err = newInternalError("group operation", r)
		}
		*err = g.err
	}
}

// usable returns the sticky error, or ErrNotMember/ErrReInitPending when the
// group may no longer send.
func (g *Group) usable() error {
	switch {
	case g.err != nil:
		return g.err
	case g.removed:
		return ErrNotMember
	case g.reinit != nil:
		return ErrReInitPending
	}
	return nil
}

// GroupID returns the group's ID, the group_id of its GroupContext (RFC
// 9420, Section 8.1).
func (g *Group) GroupID() []byte { return bytes.Clone(g.ctx.GroupID) }

// Epoch returns the current epoch number, the epoch of the GroupContext
// (RFC 9420, Section 8.1).
func (g *Group) Epoch() uint64 { return g.ctx.Epoch }

// LeafIndex returns this client's leaf index (RFC 9420, Section 4.1.1).
func (g *Group) LeafIndex() uint32 { return uint32(g.self) }

// GroupContext returns a copy of the current GroupContext (RFC 9420,
// Section 8.1).
func (g *Group) GroupContext() *GroupContext { return g.ctx.clone() }

// RatchetTree returns a copy of the current ratchet tree, for distribution
// out of band (RFC 9420, Section 12.4.3.3).
func (g *Group) RatchetTree() *RatchetTree { return g.tree.deepClone() }

// EpochAuthenticator returns the epoch_authenticator of the current epoch
// (RFC 9420, Section 8.7).
func (g *Group) EpochAuthenticator() []byte { return bytes.Clone(g.epoch.EpochAuthenticator) }

// Members returns the leaf indices of the current members: the non-blank
// leaves of the ratchet tree (RFC 9420, Section 4.1.1).
func (g *Group) Members() []uint32 {
	var out []uint32
	for _, l := range g.tree.members() {
		out = append(out, uint32(l))
	}
	return out
}

// Member returns the LeafNode (RFC 9420, Section 7.2) of the member at
// leaf, or nil.
func (g *Group) Member(leaf uint32) *LeafNode {
	if l := g.tree.Leaf(leaf); l != nil {
		return l.clone()
	}
	return nil
}

// MemberCredential returns copies of the credential and the signature key
// of the member at leaf (RFC 9420, Section 7.2), and false when leaf holds
// no member: what Member gives of them, without copying the whole
// LeafNode.
func (g *Group) MemberCredential(leaf uint32) (Credential, []byte, bool) {
	l := g.tree.Leaf(leaf)
	if l == nil {
		return Credential{}, nil, false
	}
	c := Credential{Type: l.Credential.Type, Identity: bytes.Clone(l.Credential.Identity), Data: bytes.Clone(l.Credential.Data)}
	for _, cert := range l.Credential.Certificates {
		c.Certificates = append(c.Certificates, bytes.Clone(cert))
	}
	return c, bytes.Clone(l.SignatureKey), true
}

// Export returns MLS-Exporter(label, context, length) of the current epoch
// (RFC 9420, Section 8.5), or the group's sticky error.
func (g *Group) Export(label string, context []byte, length int) ([]byte, error) {
	if g.err != nil {
		return nil, g.err
	}
	return g.epoch.Export(label, context, length)
}

// Err returns the group's sticky error, if any: this package's guard
// against using a group left inconsistent, not an RFC 9420 notion.
func (g *Group) Err() error { return g.err }

// keepResumption is how many past epochs' resumption PSKs a group keeps
// (RFC 9420, Section 8.6 asks for an upper limit).
const keepResumption = 8

// rememberResumption returns the resumption PSKs to keep after this epoch
// ends: the current one added, the oldest dropped.
func (g *Group) rememberResumption() map[uint64][]byte {
	m := make(map[uint64][]byte, keepResumption)
	for e, psk := range g.resumption {
		if e+keepResumption > g.ctx.Epoch {
			m[e] = psk
		}
	}
	if g.epoch != nil {
		m[g.ctx.Epoch] = bytes.Clone(g.epoch.ResumptionPSK)
	}
	return m
}

// lookupPSK finds a PSK: resumption PSKs of this group's current and
// remembered epochs, anything else through Config.PSKs (RFC 9420, Section
// 8.4).
func (g *Group) lookupPSK(id *PreSharedKeyID) ([]byte, error) {
	if id.Type == PSKTypeResumption && bytes.Equal(id.PSKGroupID, g.ctx.GroupID) {
		if id.PSKEpoch == g.ctx.Epoch {
			return bytes.Clone(g.epoch.ResumptionPSK), nil
		}
		if psk, ok := g.resumption[id.PSKEpoch]; ok {
			return bytes.Clone(psk), nil
		}
	}
	if g.config.PSKs != nil {
		return g.config.PSKs(id)
	}
	return nil, fmt.Errorf("%w: %s", ErrMissingPSK, describePSK(id))
}

// pskSecret returns the psk_secret of a Commit's PSKs (RFC 9420, Section
// 8.4).
func (g *Group) pskSecret(ids []PreSharedKeyID) ([]byte, error) {
	if err := checkPSKIDs(ids); err != nil {
		return nil, err
	}
	return pskSecret(ids, g.lookupPSK)
}

// NewGroup creates a group with this client as its only member (RFC 9420,
// Section 11): a one-leaf tree with a fresh LeafNode for cred, epoch 0, a
// random epoch secret and the GroupContext extensions exts, which the
// client must support.
func NewGroup(cfg *Config, groupID []byte, cred Credential, sigPriv ed25519.PrivateKey, exts []Extension) (*Group, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if len(sigPriv) != ed25519.PrivateKeySize {
		return nil, suite.ErrBadSignatureKey
	}
	if err := validateGroupContextExtensions(exts); err != nil {
		return nil, err
	}
	leaf, encPriv, err := newLeafNode(cfg, cred, sigPriv)
	if err != nil {
		return nil, err
	}
	if err := checkSupportsGroup(&leaf.Capabilities, exts); err != nil {
		return nil, err
	}
	tree := newRatchetTree(leaf)
	ctx := &GroupContext{
		Version: ProtocolMLS10, CipherSuite: CipherSuiteX25519AES128SHA256Ed25519,
		GroupID: bytes.Clone(groupID), TreeHash: tree.TreeHash(), Extensions: cloneExtensions(exts),
	}
	epochSecret := make([]byte, suite.HashSize)
	if _, err := io.ReadFull(cfg.rand(), epochSecret); err != nil {
		return nil, err
	}
	e := schedule.FromJoiner(epochSecret, nil, ctx.Marshal())
	tag := schedule.ConfirmationTag(e.ConfirmationKey, nil)
	g := &Group{
		config:          *cfg,
		ctx:             ctx,
		tree:            tree,
		interim:         schedule.InterimTranscriptHash(nil, tag),
		confirmationTag: tag,
		sigPriv:         sigPriv,
		nodeKeys:        map[tm.NodeIndex][]byte{0: encPriv},
	}
	if err := g.installEpoch(e); err != nil {
		return nil, err
	}
	return g, nil
}
