// Package didtest gives tests did:key identities: deterministic ones (Key)
// and new random ones (New).
package didtest

import (
	"testing"

	"github.com/torpor-dev/torpor/did"
)

// Key returns the Ed25519 key whose 32-byte seed is all zero but for its
// last byte, last: the same key in every run, a different one for every
// value of last.
func Key(tb testing.TB, last byte) *did.PrivateKey {
	tb.Helper()
	seed := make([]byte, 32)
	seed[31] = last
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// New returns a new random key, one a test needs only to differ from
// every other.
func New(tb testing.TB) *did.PrivateKey {
	tb.Helper()
	k, err := did.Generate(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}
