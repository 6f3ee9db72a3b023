package mls

import (
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// Benchmarks of KeyPackage generation, joining from a Welcome and
// application messages. `make bench` runs them side by side.

func BenchmarkKeyPackageGeneration(b *testing.B) {
	sig, _, err := suite.GenerateSignatureKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	cred := NewBasicCredential([]byte("bench"))
	meter := benchcpu.Start(b)
	for b.Loop() {
		if _, _, err := NewKeyPackage(nil, cred, sig); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}

// BenchmarkJoinFromWelcome joins the 8-leaf groups of the working group's
// passive-client-welcome vectors: decrypting the Welcome, validating the
// whole tree (every leaf signature, parent hashes), deriving the path keys.
func BenchmarkJoinFromWelcome(b *testing.B) {
	joins := loadPassiveJoins(b, "passive-client-welcome.cs1.json")
	for _, c := range []struct {
		name string
		j    *passiveJoin
	}{{"tree-in-welcome", joins[0]}, {"tree-out-of-band", joins[4]}} {
		b.Run(c.name, func(b *testing.B) {
			meter := benchcpu.Start(b)
			for b.Loop() {
				if _, err := join(c.j.cfg, c.j.welcome, c.j.kp, c.j.keys, c.j.tree); err != nil {
					b.Fatal(err)
				}
			}
			meter.Stop()
		})
	}
}

// BenchmarkApplicationMessage1KiB encrypts a 1 KiB application message and
// decrypts it as another member, including the wire encoding.
func BenchmarkApplicationMessage1KiB(b *testing.B) {
	j := loadPassiveJoins(b, "passive-client-welcome.cs1.json")[0]
	alice, bob := j.join(b), j.join(b)
	data := make([]byte, 1024)
	b.SetBytes(int64(len(data)))
	meter := benchcpu.Start(b)
	for b.Loop() {
		m, err := alice.EncryptApplication(data, nil)
		if err != nil {
			b.Fatal(err)
		}
		wire, err := m.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		m, err = ParseMLSMessage(wire)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bob.DecryptApplication(m); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}

// BenchmarkCreateGroupAndAdd creates a group and adds one member: NewGroup,
// a Commit with one Add (and its Welcome), MergeCommit. The new member's
// KeyPackage is made once, outside the loop.
func BenchmarkCreateGroupAndAdd(b *testing.B) {
	alice, bob := newClient(b, "alice"), newClient(b, "bob")
	kp, _ := bob.keyPackage(b)
	add := []Proposal{&AddProposal{KeyPackage: *kp}}
	meter := benchcpu.Start(b)
	for b.Loop() {
		g, err := NewGroup(alice.cfg, []byte("bench"), alice.cred(), alice.sig, nil)
		if err != nil {
			b.Fatal(err)
		}
		pc, err := g.Commit(&CommitOptions{Proposals: add, RatchetTreeInWelcome: true})
		if err != nil {
			b.Fatal(err)
		}
		if pc.Welcome == nil {
			b.Fatal("no Welcome")
		}
		if err := g.MergeCommit(pc); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}

// BenchmarkJoinTwoMemberGroup joins the group of BenchmarkCreateGroupAndAdd
// from its Welcome (tree in the Welcome).
func BenchmarkJoinTwoMemberGroup(b *testing.B) {
	alice, bob := newClient(b, "alice"), newClient(b, "bob")
	kp, priv := bob.keyPackage(b)
	g, err := NewGroup(alice.cfg, []byte("bench"), alice.cred(), alice.sig, nil)
	if err != nil {
		b.Fatal(err)
	}
	pc, err := g.Commit(&CommitOptions{Proposals: []Proposal{&AddProposal{KeyPackage: *kp}}, RatchetTreeInWelcome: true})
	if err != nil {
		b.Fatal(err)
	}
	meter := benchcpu.Start(b)
	for b.Loop() {
		if _, err := Join(bob.cfg, pc.Welcome.Welcome, kp, priv, nil); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}
