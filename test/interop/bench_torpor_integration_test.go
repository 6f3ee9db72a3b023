//go:build integration

package interop

import (
	"bytes"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/store"
)

// Torpor's entries in the side-by-side benchmarks (bench_integration_test.go).
//
//   - "torpor-mls" does in memory exactly what bench.mjs does with ts-mls:
//     the same steps, the same defaults (Commit as PrivateMessage, tree out
//     of band, PrivateMessage padding), encoding and decoding included.
//   - "torpor-session" is what agents do: package session with every
//     step's state committed to bbolt (fsync included) — the initiator's
//     EstablishPair and Delivered, the joiner's Join from its pool; one
//     transaction per message on each side.

func newKey(b testing.TB, name string) *did.PrivateKey {
	k, err := did.NewKeyFromSeed(seedOf(name))
	if err != nil {
		b.Fatal(err)
	}
	return k
}

func mlsMarshal(b testing.TB, m *mls.MLSMessage) []byte {
	out, err := m.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// torporPair establishes one pair session in memory from the joiner's
// published KeyPackage bytes.
func torporPair(b testing.TB, cfg *mls.Config, a *did.PrivateKey, kpBytes []byte, kpPriv *mls.KeyPackagePrivate) (*mls.Group, *mls.Group) {
	m, err := mls.ParseMLSMessage(kpBytes)
	if err != nil {
		b.Fatal(err)
	}
	ga, err := mls.NewGroup(cfg, nil, session.NewCredential(a.DID()), a.Ed25519(), nil)
	if err != nil {
		b.Fatal(err)
	}
	pc, err := ga.Commit(&mls.CommitOptions{Proposals: []mls.Proposal{&mls.AddProposal{KeyPackage: *m.KeyPackage}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := ga.MergeCommit(pc); err != nil {
		b.Fatal(err)
	}
	wBytes, treeBytes := mlsMarshal(b, pc.Welcome), ga.RatchetTree().Marshal()
	w, err := mls.ParseMLSMessage(wBytes)
	if err != nil {
		b.Fatal(err)
	}
	tree, err := mls.ParseRatchetTree(treeBytes)
	if err != nil {
		b.Fatal(err)
	}
	gb, err := mls.Join(cfg, w.Welcome, m.KeyPackage, kpPriv, tree)
	if err != nil {
		b.Fatal(err)
	}
	return ga, gb
}

func torporMLSConfig() *mls.Config {
	return &mls.Config{PaddingBlock: session.DefaultPadding, ValidateCredential: func(c mls.Credential, k []byte) error {
		_, err := session.CheckCredential(c, k)
		return err
	}}
}

func torporPairStack() stack {
	return stack{"torpor-mls", func(b *testing.B) float64 {
		cfg := torporMLSConfig()
		a, j := newKey(b, "bench a"), newKey(b, "bench b")
		kps := make([][]byte, b.N)
		privs := make([]*mls.KeyPackagePrivate, b.N)
		for i := range kps {
			kp, priv, err := mls.NewKeyPackage(cfg, session.NewCredential(j.DID()), j.Ed25519())
			if err != nil {
				b.Fatal(err)
			}
			kps[i] = mlsMarshal(b, &mls.MLSMessage{Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatKeyPackage, KeyPackage: kp})
			privs[i] = priv
		}
		b.ResetTimer()
		meter := benchcpu.Start(b)
		for i := 0; i < b.N; i++ {
			ga, gb := torporPair(b, cfg, a, kps[i], privs[i])
			if i == 0 && !bytes.Equal(ga.EpochAuthenticator(), gb.EpochAuthenticator()) {
				b.Fatal("the two members disagree")
			}
		}
		meter.Stop()
		return float64(b.Elapsed()) / float64(b.N)
	}}
}

func torporMessageStack(size int) stack {
	return stack{"torpor-mls", func(b *testing.B) float64 {
		cfg := torporMLSConfig()
		a, j := newKey(b, "bench a"), newKey(b, "bench b")
		kp, priv, err := mls.NewKeyPackage(cfg, session.NewCredential(j.DID()), j.Ed25519())
		if err != nil {
			b.Fatal(err)
		}
		ga, gb := torporPair(b, cfg, a, mlsMarshal(b, &mls.MLSMessage{Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatKeyPackage, KeyPackage: kp}), priv)
		data := bytes.Repeat([]byte{'x'}, size)
		b.ResetTimer()
		meter := benchcpu.Start(b)
		for i := 0; i < b.N; i++ {
			m, err := ga.EncryptApplication(data, nil)
			if err != nil {
				b.Fatal(err)
			}
			in, err := mls.ParseMLSMessage(mlsMarshal(b, m))
			if err != nil {
				b.Fatal(err)
			}
			got, err := gb.DecryptApplication(in)
			if err != nil || len(got.Data) != size {
				b.Fatal(err)
			}
		}
		meter.Stop()
		return float64(b.Elapsed()) / float64(b.N)
	}}
}

// sessionAgent is one side of the torpor-session stacks.
type sessionAgent struct {
	key *did.PrivateKey
	db  *bolt.DB
	s   *session.Sessions
}

func newSessionAgent(b testing.TB, name string, pool int) *sessionAgent {
	key := newKey(b, name)
	db, err := store.Open(filepath.Join(b.TempDir(), "agent.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	s, err := session.New(session.Config{Key: key, PoolSize: pool})
	if err != nil {
		b.Fatal(err)
	}
	return &sessionAgent{key, db, s}
}

func (a *sessionAgent) update(b testing.TB, f func(tx *bolt.Tx) error) {
	if err := a.db.Update(f); err != nil {
		b.Fatal(err)
	}
}

func sessionPair(b testing.TB, a, j *sessionAgent, kp []byte) []byte {
	var p *session.Pair
	a.update(b, func(tx *bolt.Tx) (err error) { p, err = a.s.EstablishPair(tx, j.key.DID(), kp); return err })
	j.update(b, func(tx *bolt.Tx) error {
		_, err := j.s.Join(tx, p.Handshake.Welcome, p.Handshake.RatchetTree,
			session.JoinOptions{Initiator: a.key.DID(), Policy: session.Policy{Committer: a.key.DID()}})
		return err
	})
	a.update(b, func(tx *bolt.Tx) error { return a.s.Delivered(tx, p.Group) })
	return p.Group
}

func torporSessionPairStack() stack {
	return stack{"torpor-session", func(b *testing.B) float64 {
		a, j := newSessionAgent(b, "bench a", 0), newSessionAgent(b, "bench b", b.N)
		var kps [][]byte
		j.update(b, func(tx *bolt.Tx) (err error) { kps, err = j.s.Refill(tx, b.N); return err })
		b.ResetTimer()
		meter := benchcpu.Start(b)
		for i := 0; i < b.N; i++ {
			sessionPair(b, a, j, kps[i])
		}
		meter.Stop()
		return float64(b.Elapsed()) / float64(b.N)
	}}
}

func torporSessionMessageStack(size int) stack {
	return stack{"torpor-session", func(b *testing.B) float64 {
		a, j := newSessionAgent(b, "bench a", 0), newSessionAgent(b, "bench b", 1)
		var kps [][]byte
		j.update(b, func(tx *bolt.Tx) (err error) { kps, err = j.s.Refill(tx, 1); return err })
		group := sessionPair(b, a, j, kps[0])
		data := bytes.Repeat([]byte{'x'}, size)
		b.ResetTimer()
		meter := benchcpu.Start(b)
		for i := 0; i < b.N; i++ {
			var m []byte
			a.update(b, func(tx *bolt.Tx) (err error) { m, err = a.s.Encrypt(tx, group, data); return err })
			j.update(b, func(tx *bolt.Tx) error {
				r, err := j.s.Process(tx, m, did.DID{})
				if err == nil && len(r.Plaintext) != size {
					b.Fatalf("got %d bytes", len(r.Plaintext))
				}
				return err
			})
		}
		meter.Stop()
		return float64(b.Elapsed()) / float64(b.N)
	}}
}
