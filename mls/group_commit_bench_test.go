package mls

import (
	"fmt"
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// BenchmarkProcessCommit measures a member processing a Commit with an
// UpdatePath (RFC 9420, Section 12.4.2) in groups of 2 to 256 members:
// membership tag and signature, proposal list, path validation and merge,
// one HPKE decryption and the path's key derivations, tree hash, key
// schedule and confirmation tag. The group is made by one Commit that adds
// everyone, so most parent nodes are blank and the committer's path
// secrets are encrypted to many leaves, as in a freshly built group. The
// Commit is a PublicMessage so that the same message can be processed by a
// fresh copy of the receiver in every iteration.
func BenchmarkProcessCommit(b *testing.B) {
	for _, n := range []int{2, 8, 64, 256} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			committer, receiver, msg := benchCommitSetup(b, n)
			_ = committer
			b.ResetTimer()
			meter := benchcpu.Start(b)
			for b.Loop() {
				r := *receiver
				if _, err := r.ProcessMessage(msg); err != nil {
					b.Fatal(err)
				}
			}
			meter.Stop()
		})
	}
}

// benchCommitSetup builds a group of n members and returns the creator, the
// member at the last leaf, and a Commit with a path from the creator.
func benchCommitSetup(b *testing.B, n int) (*Group, *Group, *MLSMessage) {
	b.Helper()
	alice := newClient(b, "alice")
	g, err := NewGroup(nil, []byte("bench"), alice.cred(), alice.sig, nil)
	if err != nil {
		b.Fatal(err)
	}
	var props []Proposal
	var last *client
	var lastKP *KeyPackage
	var lastPriv *KeyPackagePrivate
	for i := 1; i < n; i++ {
		last = newClient(b, fmt.Sprintf("member %d", i))
		lastKP, lastPriv = last.keyPackage(b)
		props = append(props, &AddProposal{KeyPackage: *lastKP})
	}
	pc, err := g.Commit(&CommitOptions{Proposals: props})
	if err != nil {
		b.Fatal(err)
	}
	if err := g.MergeCommit(pc); err != nil {
		b.Fatal(err)
	}
	receiver, err := Join(nil, pc.Welcome.Welcome, lastKP, lastPriv, g.RatchetTree())
	if err != nil {
		b.Fatal(err)
	}
	pc, err = g.Commit(&CommitOptions{ForcePath: true, Public: true})
	if err != nil {
		b.Fatal(err)
	}
	return g, receiver, pc.Message
}
