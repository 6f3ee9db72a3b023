package tsmls

import (
	"context"
	"strconv"
)

// Hello describes the running peer.
type Hello struct {
	TSMLS         string `json:"tsMls"`
	Node          string `json:"node"`
	CipherSuite   string `json:"cipherSuite"`
	PaddingConfig struct {
		Kind           string `json:"kind"`
		PadUntilLength int    `json:"padUntilLength"`
	} `json:"paddingConfig"`
	DefaultLifetime Lifetime `json:"defaultLifetime"`
}

// Hello asks the peer for its ts-mls and Node versions and defaults.
func (p *Peer) Hello(ctx context.Context) (Hello, error) {
	return callFor[Hello](ctx, p, "hello", nil)
}

// Exporter asks for MLS-Exporter(label, context, length) of the current
// epoch (RFC 9420 Section 8.5) in a Summary.
type Exporter struct {
	Label   string `json:"label"`
	Context Hex    `json:"context"`
	Length  int    `json:"length"`
}

// Member is one occupied leaf of the ratchet tree.
type Member struct {
	LeafIndex      uint32 `json:"leafIndex"`
	SignatureKey   Hex    `json:"signatureKey"`
	EncryptionKey  Hex    `json:"encryptionKey"`
	CredentialType string `json:"credentialType"`
	// Identity is the basic credential's identity read as UTF-8: a DID.
	Identity string `json:"identity"`
}

// Summary is an actor's view of its group after an operation: what the
// interop tests compare across members.
type Summary struct {
	GroupID                 Hex    `json:"groupId"`
	Epoch                   uint64 `json:"epoch"`
	EpochAuthenticator      Hex    `json:"epochAuthenticator"`
	TreeHash                Hex    `json:"treeHash"`
	ConfirmedTranscriptHash Hex    `json:"confirmedTranscriptHash"`
	OwnLeafIndex            uint32 `json:"ownLeafIndex"`
	// Active is "active", or "removedFromGroup" once a commit removed the
	// actor (its epoch and secrets then stay those of the last epoch).
	Active  string   `json:"active"`
	Members []Member `json:"members"`
	// Exporter is the value Config.Exporter (or State's argument) asked
	// for; nil when none was asked for.
	Exporter Hex `json:"exporter"`
}

// Lifetime is a KeyPackage's validity window in seconds since the Unix
// epoch (RFC 9420 Section 7.2), as decimal strings because the default
// not_after, 2^63-1, does not fit a JSON number.
type Lifetime struct {
	NotBefore string `json:"notBefore"`
	NotAfter  string `json:"notAfter"`
}

// LifetimeOf returns the Lifetime for the given Unix seconds.
func LifetimeOf(notBefore, notAfter uint64) *Lifetime {
	return &Lifetime{strconv.FormatUint(notBefore, 10), strconv.FormatUint(notAfter, 10)}
}

// Actor is one member with its own ts-mls state inside a Peer.
type Actor struct {
	p *Peer
	// Name is the caller's name for the actor, unique in the Peer.
	Name string
	// SignatureKey is the raw Ed25519 public key derived from the seed.
	SignatureKey Hex
	// Identity is the basic credential identity the actor uses.
	Identity string
	// DID is the did:key of SignatureKey, as the peer encodes it.
	DID string
}

// NewActor creates an actor with the 32-byte Ed25519 seed (nil: random) and
// a basic credential whose identity is identity ("" means the did:key of
// the seed's key; anything else is allowed, to test credential binding).
func (p *Peer) NewActor(ctx context.Context, name string, seed []byte, identity string) (*Actor, error) {
	args := struct {
		Actor    string `json:"actor"`
		Seed     Hex    `json:"seed,omitempty"`
		Identity string `json:"identity,omitempty"`
	}{name, seed, identity}
	var res struct {
		SignatureKey Hex    `json:"signaturePublicKey"`
		Identity     string `json:"identity"`
		DID          string `json:"did"`
	}
	if err := p.call(ctx, "newActor", args, &res); err != nil {
		return nil, err
	}
	return &Actor{p: p, Name: name, SignatureKey: res.SignatureKey, Identity: res.Identity, DID: res.DID}, nil
}

// actorArgs is embedded in every actor request.
type actorArgs struct {
	Actor    string    `json:"actor"`
	Exporter *Exporter `json:"exporter,omitempty"`
}

func (a *Actor) args() actorArgs { return actorArgs{Actor: a.Name, Exporter: a.p.cfg.Exporter} }

// Drop deletes the actor and its state from the peer.
func (a *Actor) Drop(ctx context.Context) error {
	return a.p.call(ctx, "dropActor", a.args(), nil)
}

// KeyPackage is a fresh KeyPackage: Bytes is the MLSMessage (wire format
// mls_key_package) a relay would serve; Ref its KeyPackageRef (RFC 9420
// Section 5.2). The peer keeps the private half until a Welcome uses it.
type KeyPackage struct {
	Bytes Hex `json:"keyPackage"`
	Ref   Hex `json:"ref"`
}

// KeyPackage makes a KeyPackage with ts-mls defaults (defaultCapabilities,
// with its random GREASE values) and lifetime (nil: defaultLifetime,
// 0 … 2^63-1).
func (a *Actor) KeyPackage(ctx context.Context, lifetime *Lifetime) (KeyPackage, error) {
	args := struct {
		actorArgs
		Lifetime *Lifetime `json:"lifetime,omitempty"`
	}{a.args(), lifetime}
	return callFor[KeyPackage](ctx, a.p, "keyPackage", args)
}

// CreateGroup creates a one-member group with the given group ID.
func (a *Actor) CreateGroup(ctx context.Context, groupID []byte) (Summary, error) {
	args := struct {
		actorArgs
		GroupID Hex `json:"groupId"`
	}{a.args(), groupID}
	return callFor[Summary](ctx, a.p, "createGroup", args)
}

// CommitOptions are the proposals a commit carries by value, besides every
// proposal received in the epoch (which ts-mls commits by reference), and
// its framing.
type CommitOptions struct {
	// Add holds KeyPackages, MLSMessage-wrapped or bare.
	Add []Hex `json:"add,omitempty"`
	// Remove holds leaf indexes.
	Remove []uint32 `json:"remove,omitempty"`
	// Update asks for a commit with a path (the committer's own update); the
	// peer refuses it when ts-mls would send none (a commit of Adds only).
	// An empty commit always carries a path.
	Update bool `json:"update,omitempty"`
	// PublicMessage sends the commit as a PublicMessage; ts-mls's default
	// is a PrivateMessage.
	PublicMessage bool `json:"wireAsPublicMessage,omitempty"`
	// RatchetTreeExtension puts the ratchet tree into the Welcome's
	// GroupInfo; ts-mls's default leaves it out (sent out of band).
	RatchetTreeExtension bool `json:"ratchetTreeExtension,omitempty"`
}

// CommitResult is a commit the actor created and applied.
type CommitResult struct {
	// Commit is the MLSMessage for the other members.
	Commit Hex `json:"commit"`
	// Welcome is the MLSMessage for added members; nil when none.
	Welcome Hex `json:"welcome"`
	// RatchetTree is the new epoch's tree (RFC 9420 Section 12.4.3.3
	// encoding) for joiners when it is sent out of band.
	RatchetTree Hex     `json:"ratchetTree"`
	Summary     Summary `json:"summary"`
}

// Commit creates a commit and applies it to the actor's state.
func (a *Actor) Commit(ctx context.Context, opts CommitOptions) (CommitResult, error) {
	args := struct {
		actorArgs
		CommitOptions
	}{a.args(), opts}
	return callFor[CommitResult](ctx, a.p, "commit", args)
}

// Proposal is a proposal to send on its own, for a later commit by
// reference. Build it with ProposeAdd, ProposeRemove or ProposeUpdate.
type Proposal struct {
	Type       string `json:"type"`
	KeyPackage Hex    `json:"keyPackage,omitempty"`
	Leaf       uint32 `json:"leaf"`
}

// ProposeAdd proposes adding the member of keyPackage.
func ProposeAdd(keyPackage []byte) Proposal { return Proposal{Type: "add", KeyPackage: keyPackage} }

// ProposeRemove proposes removing the member at leaf.
func ProposeRemove(leaf uint32) Proposal { return Proposal{Type: "remove", Leaf: leaf} }

// ProposeUpdate proposes replacing the sender's own leaf with one holding a
// fresh HPKE key (RFC 9420 Section 12.1.2).
func ProposeUpdate() Proposal { return Proposal{Type: "update"} }

// ProposalResult is a sent proposal: the MLSMessage for every member
// (including the eventual committer) and its ProposalRef (Section 5.2).
type ProposalResult struct {
	Message Hex `json:"message"`
	Ref     Hex `json:"ref"`
}

// Propose sends a proposal, as a PublicMessage when public is true, else a
// PrivateMessage.
func (a *Actor) Propose(ctx context.Context, prop Proposal, public bool) (ProposalResult, error) {
	args := struct {
		actorArgs
		Proposal Proposal `json:"proposal"`
		Public   bool     `json:"wireAsPublicMessage,omitempty"`
	}{a.args(), prop, public}
	return callFor[ProposalResult](ctx, a.p, "propose", args)
}

// Join joins from a Welcome with whichever of the actor's KeyPackages it
// names. ratchetTree is the out-of-band tree; nil when the Welcome carries
// the ratchet_tree extension.
func (a *Actor) Join(ctx context.Context, welcome, ratchetTree []byte) (Summary, error) {
	args := struct {
		actorArgs
		Welcome     Hex `json:"welcome"`
		RatchetTree Hex `json:"ratchetTree,omitempty"`
	}{a.args(), welcome, ratchetTree}
	return callFor[Summary](ctx, a.p, "join", args)
}

// JoinExternalResult is an external join: the commit (a PublicMessage) the
// members must process, and the joiner's new state.
type JoinExternalResult struct {
	Commit  Hex     `json:"commit"`
	Summary Summary `json:"summary"`
}

// JoinExternal joins by external commit from a GroupInfo with external_pub
// (RFC 9420 Section 12.4.3.2); ratchetTree as for Join.
func (a *Actor) JoinExternal(ctx context.Context, groupInfo, ratchetTree []byte) (JoinExternalResult, error) {
	args := struct {
		actorArgs
		GroupInfo   Hex `json:"groupInfo"`
		RatchetTree Hex `json:"ratchetTree,omitempty"`
	}{a.args(), groupInfo, ratchetTree}
	return callFor[JoinExternalResult](ctx, a.p, "joinExternal", args)
}

// Processed is the outcome of processing one group message.
type Processed struct {
	// Kind is "application", "proposal" or "commit".
	Kind string `json:"kind"`
	// Sender is the MLS-authenticated sender as the tree of the message's
	// epoch had it; nil for a sender that is not a member.
	Sender *Member `json:"sender"`
	// ApplicationData is the plaintext of an application message.
	ApplicationData Hex `json:"applicationData"`
	// Proposals names the proposal types a commit applied, or the one a
	// proposal message carried.
	Proposals []string `json:"proposals"`
	Summary   Summary  `json:"summary"`
}

// Process processes an MLSMessage (PrivateMessage or PublicMessage).
func (a *Actor) Process(ctx context.Context, message []byte) (Processed, error) {
	args := struct {
		actorArgs
		Message Hex `json:"message"`
	}{a.args(), message}
	return callFor[Processed](ctx, a.p, "process", args)
}

// Encrypt makes an application message (an MLSMessage PrivateMessage).
func (a *Actor) Encrypt(ctx context.Context, plaintext, authenticatedData []byte) (Hex, error) {
	args := struct {
		actorArgs
		Plaintext         Hex `json:"plaintext"`
		AuthenticatedData Hex `json:"authenticatedData,omitempty"`
	}{a.args(), plaintext, authenticatedData}
	var res struct {
		Message Hex `json:"message"`
	}
	err := a.p.call(ctx, "encrypt", args, &res)
	return res.Message, err
}

// ExportTree returns the current ratchet tree (encodeRatchetTree).
func (a *Actor) ExportTree(ctx context.Context) (Hex, error) {
	var res struct {
		RatchetTree Hex `json:"ratchetTree"`
	}
	err := a.p.call(ctx, "exportTree", a.args(), &res)
	return res.RatchetTree, err
}

// State returns the actor's Summary with the given exporter (nil: the
// Config's).
func (a *Actor) State(ctx context.Context, ex *Exporter) (Summary, error) {
	args := a.args()
	if ex != nil {
		args.Exporter = ex
	}
	return callFor[Summary](ctx, a.p, "state", args)
}

// GroupInfo returns a signed GroupInfo MLSMessage with the external_pub
// extension, and the ratchet_tree extension when withTree is true.
func (a *Actor) GroupInfo(ctx context.Context, withTree bool) (Hex, error) {
	args := struct {
		actorArgs
		RatchetTree bool `json:"ratchetTree,omitempty"`
	}{a.args(), withTree}
	var res struct {
		GroupInfo Hex `json:"groupInfo"`
	}
	err := a.p.call(ctx, "groupInfo", args, &res)
	return res.GroupInfo, err
}

// Save returns the actor's state in ts-mls's own encoding
// (encodeGroupState): every secret included, never an interop format.
func (a *Actor) Save(ctx context.Context) (Hex, error) {
	var res struct {
		State Hex `json:"state"`
	}
	err := a.p.call(ctx, "save", a.args(), &res)
	return res.State, err
}

// Restore replaces the actor's state with one Save returned.
func (a *Actor) Restore(ctx context.Context, state []byte) (Summary, error) {
	args := struct {
		actorArgs
		State Hex `json:"state"`
	}{a.args(), state}
	return callFor[Summary](ctx, a.p, "restore", args)
}

// BenchKind selects what Bench measures; see test/interop/node/bench.mjs.
type BenchKind string

const (
	// BenchPairSession is one pair-session establishment: decode the
	// joiner's published KeyPackage, create the group, commit the Add,
	// encode and decode Welcome and ratchet tree, join.
	BenchPairSession BenchKind = "pairSession"
	// BenchMessage is one application message of the given size encrypted,
	// encoded, decoded and decrypted.
	BenchMessage BenchKind = "message"
)

// BenchResult is ts-mls's own timing, measured inside the Node process.
type BenchResult struct {
	Iterations int     `json:"iterations"`
	TotalNs    float64 `json:"totalNs"`
	NsPerOp    float64 `json:"nsPerOp"`
}

// Bench runs iterations of kind inside the peer; size is the message size
// for BenchMessage (0: 1 KiB).
func (p *Peer) Bench(ctx context.Context, kind BenchKind, iterations, size int) (BenchResult, error) {
	args := struct {
		Kind       BenchKind `json:"kind"`
		Iterations int       `json:"iterations"`
		Size       int       `json:"size,omitempty"`
	}{kind, iterations, size}
	return callFor[BenchResult](ctx, p, "bench", args)
}

// callFor runs op with args on p and returns its result, decoded as R.
func callFor[R any](ctx context.Context, p *Peer, op string, args any) (R, error) {
	var res R
	err := p.call(ctx, op, args, &res)
	return res, err
}
