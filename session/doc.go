// Package session turns package mls into the MLS sessions agents use
// (draft-chapman-a2a-mls-03 Sections 4.3, 6 and 7.5–7.6): credential
// binding, a KeyPackage pool for a device that sleeps, pair sessions,
// group sessions under a designated committer, application messages that
// carry Governed Objects, and group state kept in bbolt that fails closed.
//
// # Transactions
//
// Every operation takes a *bbolt.Tx the caller owns and keeps nothing in
// memory: the agent's drain processes a batch of queued records in one
// transaction, so the MLS state, the replay cache and the idempotency
// ledger commit together or not at all. An epoch change (a Commit, a Join)
// and the deletion of the secrets it consumed (the KeyPackage a Welcome
// used, the previous epoch's keys, each used message key) land in the same
// transaction (RFC 9420, Section 9.2; draft Section 6.4). Loading a group
// per operation costs a restore (tree hash, key checks) of some tens of
// microseconds for a pair session; caching groups across transactions
// would have to be invalidated on every rollback, and a drain rolls a
// batch back whenever its store fails, so this package does not.
//
// # Credential binding
//
// A credential is a basic credential whose identity is the agent's did:key
// in UTF-8, and the LeafNode signature_key is octet for octet the key in
// that DID (CheckCredential). It is installed as the MLS Authentication
// Service, so package mls applies it to every KeyPackage and LeafNode that
// enters a group (Add, Update, UpdatePath, the tree of a Welcome or an
// external join) before any state changes; the error names the DID. A
// member's DID never changes: an Update or UpdatePath LeafNode that would
// give a member another DID is refused (RFC 9420, Section 5.3.1).
//
// # Storage and failing closed
//
// See store.go for the layout. The ratchet tree is stored apart from the
// secrets (Section 6.4's recommendation), a checksum covers every field,
// and the decoders are strict. A group that is missing a field, fails its
// checksum or does not restore exactly is deleted in the caller's
// transaction and the operation returns a *CorruptError (ErrDropped): the
// session must be re-established, never continued half-restored. The
// bbolt file is the agent's, opened by store.Open with mode 0600 in a 0700
// directory: Section 6.4 asks for the same protection as the agent's key,
// which sits beside it.
//
// # Designated committer
//
// A group's Policy names its committer (Section 6.3.1), or none. Under a
// committer, Commit refuses to commit for anyone else, and Process rejects
// a Commit whose envelope claims another sender or whose MLS-authenticated
// sender (the member whose leaf signed it, known for a PrivateMessage only
// after decryption) is not the committer, before anything is stored. A pair
// session's committer is its initiator.
package session
