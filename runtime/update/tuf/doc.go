// Package tuf verifies The Update Framework's metadata on the device: the
// four top-level roles (root, timestamp, snapshot, targets), their
// signatures, versions and expiries, and a target's length and hashes, as
// the TUF specification says
// (https://theupdateframework.github.io/specification/latest/, Section 4
// "Document formats" and Section 5.3 to 5.6 of the "Detailed client
// workflow"). It is what runtime/update drives; it fetches nothing and
// reads no clock: the caller hands it bytes and the time to judge expiry
// by.
//
// Trusted holds the trusted metadata and takes new metadata in the order
// of Section 5: New from a trusted root, UpdateRoot for each root version
// N+1, then UpdateTimestamp, UpdateSnapshot and UpdateTargets. A
// signature is checked over the canonical JSON (OLPC canonical JSON, as
// Section 4.2 requires, encoded by go-securesystemslib's cjson) of the
// "signed" object as it was received, so a field this package does not
// know is still signed. Only ed25519 keys verify (what torporctl's key
// ceremony makes, docs/updates.md); a role listing a key of another type
// is refused. Metadata must be strict JSON (internal/strictjson: no
// member twice, valid UTF-8), with the member names Section 4 gives in
// exactly their case. Delegated targets roles are not followed: the
// device reads the top-level targets only.
//
// The errors wrap one of ErrUnsigned, ErrExpired, ErrVersion,
// ErrEqualVersion, ErrLengthOrHash, ErrInvalid or ErrOrder, so that a
// caller can tell a refusal's class with errors.Is.
//
// The store/updaterepo package and torporctl, which sign, use go-tuf/v2;
// the differential tests of this package (TestDifferential,
// FuzzRepoDifferential, FuzzDifferential) check that this package and
// go-tuf's trustedmetadata accept and refuse the same metadata, except
// where this package is deliberately stricter (listed in TestStricter).
package tuf
