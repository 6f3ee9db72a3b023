// Package envelope is the Autonomy Envelope's scope algebra, LIP-3 scope
// algebra v0 ("lap-scope-v0"), as docs/envelope.md describes it: a Scope says what an agent may do
// unsupervised (an action, a resource pattern, a cap, counterparties, a
// delegation depth and a decay window), and Covers decides whether a child
// scope attenuates a parent, so that a verifier can check a delegated
// envelope against the one it was delegated from.
//
// The rules are those the shared vectors exercise
// (testdata/vectors/envelope/attenuation.json, transcribed from the reference
// implementation's tests): a closed action registry, segment-tokenized
// resource patterns with terminal wildcards, two-dimensional caps in one
// unit over UTC epoch-bucket windows, explicit counterparty sets, depth that
// drops by at least one, decay that only tightens, and budget conservation
// over the scopes of one child envelope. Where the vectors are silent, this
// package chooses the narrower reading and says so at the rule.
//
// Conservation across separately issued sibling envelopes is not visible
// here: a verifier sees one envelope at a time, so that is the issuer's duty.
package envelope
