package session

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/store"
)

// testStart is the fake clock's start for every test.
var testStart = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// agent is one agent in a test: its key, its bbolt file and sessions.
type agent struct {
	t    testing.TB
	name string
	key  *did.PrivateKey
	path string
	db   *bolt.DB
	s    *Sessions
	clk  *clocktest.Clock
	cfg  Config
}

// newAgent returns an agent with a deterministic key derived from name and
// a bbolt file in a temporary directory.
func newAgent(t testing.TB, name string, clk *clocktest.Clock) *agent {
	t.Helper()
	seed := sha256.Sum256([]byte("torpor session test " + name))
	key, err := did.NewKeyFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	if clk == nil {
		clk = clocktest.New(testStart)
	}
	a := &agent{t: t, name: name, key: key, path: filepath.Join(t.TempDir(), name, "agent.db"), clk: clk}
	a.cfg = Config{Key: key, Clock: clk, PoolSize: 4}
	a.open()
	t.Cleanup(func() { a.db.Close() })
	return a
}

func (a *agent) id() did.DID { return a.key.DID() }

// open (re)opens the agent's bbolt file and makes new Sessions.
func (a *agent) open() {
	a.t.Helper()
	db, err := store.Open(a.path, &store.Options{NoSync: true})
	if err != nil {
		a.t.Fatal(err)
	}
	s, err := New(a.cfg)
	if err != nil {
		a.t.Fatal(err)
	}
	a.db, a.s = db, s
}

// reopen closes and reopens the agent's bbolt file, as after a reboot.
func (a *agent) reopen() {
	a.t.Helper()
	if err := a.db.Close(); err != nil {
		a.t.Fatal(err)
	}
	a.open()
}

// update runs f in a write transaction and fails the test on error.
func (a *agent) update(f func(tx *bolt.Tx) error) {
	a.t.Helper()
	if err := a.db.Update(f); err != nil {
		a.t.Fatalf("%s: %v", a.name, err)
	}
}

// create has a create a group session with the default policy and
// returns the group ID.
func (a *agent) create() []byte {
	a.t.Helper()
	var group []byte
	a.update(func(tx *bolt.Tx) error {
		in, err := a.s.Create(tx, nil, Policy{})
		group = in.Group
		return err
	})
	return group
}

// try runs f in a write transaction and returns its error; the
// transaction commits even when f fails (as the agent's drain does).
func (a *agent) try(f func(tx *bolt.Tx) error) error {
	a.t.Helper()
	var ferr error
	if err := a.db.Update(func(tx *bolt.Tx) error { ferr = f(tx); return nil }); err != nil {
		a.t.Fatal(err)
	}
	return ferr
}

// keyPackage refills the agent's pool and returns one published
// KeyPackage.
func (a *agent) keyPackage() []byte {
	a.t.Helper()
	var kp []byte
	a.update(func(tx *bolt.Tx) error {
		kps, err := a.s.Refill(tx, 0)
		if err != nil {
			return err
		}
		kp = kps[0]
		_, err = a.s.Published(tx, kps[:1], nil)
		return err
	})
	return kp
}

// info returns the agent's view of a group.
func (a *agent) info(group []byte) *Info {
	a.t.Helper()
	var in *Info
	if err := a.db.View(func(tx *bolt.Tx) (err error) { in, err = a.s.Info(tx, group); return err }); err != nil {
		a.t.Fatalf("%s: info: %v", a.name, err)
	}
	return in
}

// pair establishes a pair session initiated by a with b and returns its
// group ID.
func pair(t testing.TB, a, b *agent) []byte {
	t.Helper()
	kp := b.keyPackage()
	var p *Pair
	a.update(func(tx *bolt.Tx) (err error) { p, err = a.s.EstablishPair(tx, b.id(), kp); return err })
	b.update(func(tx *bolt.Tx) error {
		_, err := b.s.Join(tx, p.Handshake.Welcome, p.Handshake.RatchetTree,
			JoinOptions{Initiator: p.Handshake.InitiatorDID, Policy: Policy{Committer: p.Handshake.InitiatorDID}})
		return err
	})
	a.update(func(tx *bolt.Tx) error { return a.s.Delivered(tx, p.Group) })
	return p.Group
}

// send encrypts data from a and processes it at b, returning what b got.
func send(t testing.TB, a, b *agent, group, data []byte) *Received {
	t.Helper()
	var wire []byte
	a.update(func(tx *bolt.Tx) (err error) { wire, err = a.s.Encrypt(tx, group, data); return err })
	var r *Received
	b.update(func(tx *bolt.Tx) (err error) { r, err = b.s.Process(tx, wire, did.DID{}); return err })
	return r
}

// testObject is a JSON object standing in for a Governed Object.
func testObject(n int) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"id": n, "issuerDid": "x"})
	return b
}

// mlsGroup returns the agent's group restored without the credential
// binding, for a test to misuse directly (as a malicious or
// non-conforming member would).
func (a *agent) mlsGroup(group []byte) *mls.Group {
	a.t.Helper()
	var g *mls.Group
	if err := a.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRoot).Bucket(bucketGroups).Bucket(groupKey(group))
		var err error
		g, err = mls.RestoreGroup(&mls.Config{}, &mls.State{Tree: b.Get(keyTree), Secrets: b.Get(keySecrets)})
		return err
	}); err != nil {
		a.t.Fatalf("%s: %v", a.name, err)
	}
	return g
}

// snapshot returns every key and value under the session bucket, to show
// that a rejected operation changed nothing.
func (a *agent) snapshot() map[string]string {
	a.t.Helper()
	out := map[string]string{}
	var walk func(prefix string, b *bolt.Bucket)
	walk = func(prefix string, b *bolt.Bucket) {
		b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(prefix+hex.EncodeToString(k)+"/", b.Bucket(k))
				return nil
			}
			out[prefix+hex.EncodeToString(k)] = hex.EncodeToString(v)
			return nil
		})
	}
	a.db.View(func(tx *bolt.Tx) error {
		if r := tx.Bucket(bucketRoot); r != nil {
			walk("", r)
		}
		return nil
	})
	return out
}

func marshal(t testing.TB, m *mls.MLSMessage) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
