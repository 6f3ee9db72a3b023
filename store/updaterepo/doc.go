// Package updaterepo is the relay's TUF repository for agent updates
// (docs/updates.md): the owner's signed root and targets metadata, the
// snapshot and timestamp the relay signs with its online keys, and the
// targets' contents as blobs addressed by their SHA-256, bounded in
// bytes.
//
// Nothing is taken on trust. A root must be the next version, signed by
// the current root's keys and its own (TUF specification Section 5.3.4,
// 5.3.5, with go-tuf/v2's trustedmetadata); targets metadata must be
// signed by the threshold of targets keys the root names
// (metadata.Root.VerifyDelegate), newer than the current one, and every
// target it lists must have its blob here with the length and hashes it
// states. Only then does the relay sign a snapshot naming it and a
// timestamp naming that snapshot (Section 4.4, 4.5). A put that would
// pass the byte bound is refused with an error saying so.
//
// Open keeps the repository in a bbolt file; New takes another Backend,
// such as store/jsstore's Updates, which every relay of a JetStream
// cluster shares. A Backend applies each change whole by
// compare-and-swap, so that of relays re-signing at once one signs and
// the others find the result.
//
// A hosted relay keeps a repository per tenant beside its own in the same
// store: Tenant returns the one of an owner DID (a Backend that is a
// Partitioner keeps it under keys of its own), and BlobBytes is what the
// tenant's update_bytes quota bounds (docs/tenants.md). RemoveBlob gives a
// blob's bytes back, unless the current targets metadata names it
// (ErrNamed).
//
// Devices read it through Metadata and Blob (a range of a blob); Fresh
// signs a timestamp for a device that slept past the last one.
package updaterepo
