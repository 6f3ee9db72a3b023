// Package mls implements the Messaging Layer Security protocol, RFC 9420,
// for the one cipher suite Torpor speaks: 0x0001,
// MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519. It rests on the standard
// library (crypto/hpke, crypto/hkdf, crypto/hmac, crypto/ed25519,
// crypto/aes) and golang.org/x/crypto/cryptobyte, and is proved against the
// MLS working group's test vectors in mls/testdata (see mls/vectors and
// "torporctl mls-vectors"; their JSON schemas are in mls/internal/vectorfmt).
//
// # Wire format
//
// Every structure of the RFC has a strict codec (RFC 9420, Section 2.1):
// non-minimal variable-size length headers, the reserved 0b11 prefix,
// truncated input, trailing bytes, unknown enum values in a select and
// duplicate extension types are rejected with a *ParseError ("mls: parsing
// Welcome: …"), which matches ErrMalformed. Unknown extension, credential and
// proposal types, and GREASE values (Section 13.5), round-trip byte for
// byte; the bodies of unknown credentials and proposals are carried as
// opaque<V>, as other implementations do.
//
// # Implemented, by RFC 9420 section
//
//   - 2.1 presentation language and variable-size vectors (mls/internal/wire)
//   - 4.2 and Appendix C tree math (mls/internal/treemath)
//   - 6 message framing structures: MLSMessage, PublicMessage, PrivateMessage,
//     FramedContent, AuthenticatedContent, FramedContentTBS, SenderData
//   - 7.1, 7.2 ParentNode, LeafNode, Capabilities, Lifetime, Extension
//   - 8.1 GroupContext; 8.4 PreSharedKeyID
//   - 10 KeyPackage; 12.1 all proposals; 12.4 Commit, ProposalOrRef;
//     7.6 UpdatePath, HPKECiphertext; 12.4.3 GroupInfo, Welcome,
//     GroupSecrets, EncryptedGroupSecrets, PathSecret
//   - 12.1.8.1 external_senders (a vector of ExternalSender);
//     11.1 required_capabilities; 12.4.3.2 external_pub;
//     12.4.3.3 ratchet_tree
//
// # Ratchet tree, TreeKEM, proposals and commits
//
//   - 4.1.1 resolutions, 4.1.2 filtered direct paths; 7.7 adding and
//     removing leaves (leftmost blank leaf, extension, truncation of blank
//     right halves); 7.8 tree hashes; 7.9 parent hashes and their
//     verification (7.9.2, top down, original sibling tree hashes with
//     unmerged leaves removed); RatchetTree
//   - 7.3 LeafNode validation: signature (group and leaf bound for update
//     and commit leaves), source, capabilities of its credential and
//     extensions, required_capabilities and GroupContext extensions,
//     credential types supported by every member and vice versa, unique
//     signature and encryption keys, lifetime (see below), and the
//     Authentication Service hooks Config.ValidateCredential and, for a
//     leaf replaced by an Update or an UpdatePath, Config.ValidateSuccessor
//     (5.3.1)
//   - 10, 10.1 NewKeyPackage (with GREASE values in the capabilities, 13.5)
//     and KeyPackage.Verify
//   - 11 NewGroup; 12.4.3.1 tree validation on join (unmerged leaves,
//     unique keys, parent hashes, every leaf)
//   - 7.4–7.6 TreeKEM: UpdatePath creation (path secrets, node key pairs,
//     parent hashes, re-signed commit leaf, encryption to the copath
//     resolutions without the Commit's new members) and processing (leaf
//     validation, fresh keys, merge, parent-hash check, decryption, key
//     check, commit_secret); TreeKEMMember runs it without a Group
//   - 12.1 every proposal: Group.Propose, ProposeUpdate, ProposeRotation
//     (an Update with a new credential and signature key; a Commit's
//     UpdatePath does the same with CommitOptions.Rotate); 5.2 proposal
//     references; 12.1.8 sender rules for external and new-member senders
//   - 12.2 proposal-list validation for member and external Commits; 12.3
//     applying a list in the prescribed order
//   - 12.4, 12.4.1 Group.Commit (by value and by reference, path when
//     required or asked for, PublicMessage or PrivateMessage, Welcome and
//     signed GroupInfo with external_pub) and MergeCommit; 12.4.2
//     ProcessMessage for Commits of members and external joiners, ReInit
//     (the group then refuses to send) and Commits that remove us
//
// Design: a Commit, created or received, builds the next epoch's state as a
// new Group value and replaces the old one only after every check passed,
// so a rejected message never leaves a half-applied state; receiving a
// PrivateMessage changes the secret tree only once it decrypted and
// verified, so a rejected one leaves the saved state byte for byte as it
// was (TestRejectedMessageLeavesStateUnchanged). A panic inside an
// operation (input the code did not expect) becomes the group's sticky
// error, an *InternalError that keeps the panic's stack, instead of
// crashing the daemon. Our own Commits stay pending until
// MergeCommit, because only the delivery service knows whether a Commit won
// the epoch. Trees cache their subtree hashes and copies share LeafNodes,
// so processing a Commit in a 256-member group costs about as much as in a
// 64-member one (BenchmarkProcessCommit). KeyPackage lifetimes are checked
// when this client commits or proposes an Add, not when it follows someone
// else's Commit: a sleeping device may process a Commit days after it was
// made, and members that disagree on a KeyPackage's validity would fork the
// group (RFC 9420, Section 7.3 only recommends the check for received
// messages).
//
// # Cryptography, key schedule and message protection
//
//   - 5.1, 5.2 ExpandWithLabel, DeriveSecret, RefHash, SignWithLabel /
//     VerifyWithLabel, EncryptWithLabel / DecryptWithLabel, KEM DeriveKeyPair
//     (mls/internal/suite)
//   - 8 key schedule, 8.2 transcript hashes and confirmation tags, 8.3
//     external init, 8.4 PSK secret, 8.5 exporter, 8.6 resumption PSKs
//     (kept for the last 8 epochs), 8.7 epoch authenticator
//     (mls/internal/schedule)
//   - 9, 9.1 secret tree and hash ratchets, 6.3.2 sender-data key and nonce
//     (mls/internal/secrettree); 9.2 deletion schedule: node secrets are
//     dropped once both children exist, ratchet keys once used; the joiner,
//     epoch, commit and encryption secrets are never stored
//   - 6.1 signatures over FramedContentTBS, 6.2 membership tags, 6.3
//     PrivateMessage encryption with reuse guard and zero padding (checked
//     on receipt), Protector; out-of-order generations within a window
//     (1024 ahead, 64 skipped keys kept per ratchet); a replayed or deleted
//     generation fails with ErrGenerationUsed
//   - 15 application messages: Group.EncryptApplication /
//     DecryptApplication (ProcessMessage handles them too); 15.3 the window
//     is Config.MaxForwardGenerations / MaxSkippedKeys, and application
//     messages of the Config.PastEpochs epochs before the current one
//     (default 1) still decrypt, for messages sent before a Commit and
//     delivered after it; handshake messages of past epochs never do
//
// Decryption and MAC failures of every layer return the single opaque
// ErrDecryption.
//
// # Joining and group state
//
//   - 12.4.3.1 Join from a Welcome (OpenWelcome decrypts and checks the
//     confirmation tag) with the tree in a ratchet_tree extension or out of
//     band, full tree validation, PSKs (Config.PSKs, ExternalPSKs) and the
//     path secret's private keys
//   - 12.4.3.2 JoinExternal: external Commits from a GroupInfo with
//     external_pub, including resync (removing our old leaf); external_pub
//     is written length-prefixed as the RFC says and also read as the bare
//     32-byte key ts-mls 1.6.4 writes (docs/interop.md)
//   - 12.4.3 Group.GroupInfo signs a GroupInfo (ratchet_tree and external_pub
//     on request)
//   - 12.1.8 ExternalProposal: proposals from an external_senders entry
//   - Group.State / RestoreGroup serialise a group exactly, with the public
//     ratchet tree apart from the secrets (for storage on flash; the secrets
//     must be encrypted at rest)
//
// Lifetimes (7.2) are checked for KeyPackages a group adds, never for
// leaves already in a tree it joins: the working group's vectors carry
// leaves that have since expired. Config.Time injects the clock. Ours last
// DefaultKeyPackageLifetime (27 days) from KeyPackageClockSkew (an hour)
// before they are made, under the one-month cap some peers apply.
//
// # Not implemented
//
//   - cipher suites other than 0x0001 (their vector cases are reported as
//     skipped)
//   - checking that a joined group's ID is unique among the caller's groups
//     (12.4.3.1), and the ReInit / branch follow-up checks that need the old
//     group (11.2, 11.3): left to the caller
//   - proposal types other than RFC 9420's: they decode and round-trip,
//     but a Commit that covers one is rejected (12.2 allows them only if
//     every member supports them, and this package could not apply them)
//   - the application-level checks that RFC 9420 leaves to the
//     application: whether a resync external Commit's new credential may
//     replace the removed member's (12.2), and whether two KeyPackages are
//     the same client beyond identical signature keys
//   - wiping secrets from memory: Go's collector may keep copies; the
//     deletion schedule is about what the state holds and stores
package mls
