// Package update is the device's side of agent updates: it drives the TUF
// client workflow (The Update Framework specification, Section 5, "Detailed
// client workflow",
// https://theupdateframework.github.io/specification/latest/#detailed-client-workflow)
// over the device's link to its relay, and ends with a verified file at a
// path for one target, or a reason why there is none.
//
// Every check of the metadata is package runtime/update/tuf's
// (signatures and thresholds, versions, expiry, lengths and hashes),
// which is held to go-tuf/v2's trustedmetadata by a differential test.
// This package only moves bytes between the relay (a Source) and that
// verifier, keeps the trusted metadata on flash between wakes, and judges
// time by the device's trusted time (runtime/trusted) instead of the wall
// clock: Client.Check takes the time to judge expiry by from its caller.
// torpor-agent links neither go-tuf nor sigstore nor protobuf
// (internal/deptest; docs/footprint.md has what they cost).
//
// Beyond TUF, a target carries Torpor's own conditions in its custom
// fields (Custom): a strictly increasing version, the hardware it fits,
// an install window, whether the owner must confirm, and a minimum
// supply voltage. docs/updates.md tells the whole story: the key
// ceremony, the roles and their expiries, and what each attack meets.
//
// What this package hands on is a file whose length and hashes are the
// target's; installing it (the A/B slots, the trial boot) is another
// package's business.
package update
