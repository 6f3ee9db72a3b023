package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/store"
)

// Storage layout (draft-chapman-a2a-mls-03 Section 6.4), in the caller's
// bbolt file:
//
//	bucket "session"
//	  bucket "groups"
//	    bucket 0x01 ‖ <group ID>
//	      "meta"    CBOR: version, our DID, policy (designated committer),
//	                pair peer, delivery flag, epoch
//	      "tree"    the ratchet tree (RFC 9420, Section 12.4.3.3 encoding)
//	      "secrets" everything else of the mls.Group (mls.State.Secrets)
//	      "sum"     SHA-256 over the three, length-prefixed
//	  bucket "peers"  <peer DID> -> <group ID> of the current pair session
//	  bucket "kp"     <KeyPackageRef> -> CBOR pool entry (see pool.go)
//	  bucket "kp-used" <KeyPackageRef> -> <group ID> joined with it (no secret);
//	                   "lr:" ‖ <KeyPackageRef> ‖ <group ID> -> <group ID> for a last-resort one
//	  bucket "kp-lr"  <KeyPackageRef> -> CBOR last-resort entry (see lastresort.go)
//
// The tree is stored apart from the secrets, as Section 6.4 recommends: it
// is public, the largest part, and unchanged by application messages, so a
// message rewrites only the small secrets record. The checksum makes any
// corruption of any field, including the random secrets a decoder cannot
// check, fail closed on load; the decoders themselves are strict too
// (lengths, versions, trailing bytes, tree hash against the GroupContext,
// private keys against the tree, the stored epoch against the restored
// one).
var (
	bucketRoot   = []byte("session")
	bucketGroups = []byte("groups")
	bucketPeers  = []byte("peers")
	bucketKP     = []byte("kp")
	bucketUsed   = []byte("kp-used")
	bucketLR     = []byte("kp-lr")

	keyMeta    = []byte("meta")
	keyTree    = []byte("tree")
	keySecrets = []byte("secrets")
	keySum     = []byte("sum")
)

// metaVersion is the version of the meta record.
const metaVersion = 1

// meta is the small record kept beside a group's MLS state.
type meta struct {
	Version int `cbor:"v"`
	// Self is this agent's DID; a store is only ever opened by one agent.
	Self string `cbor:"self"`
	// Committer is the designated committer's DID (draft Section 6.3.1);
	// empty when every member may commit.
	Committer string `cbor:"committer,omitempty"`
	// Peer is the other member of a pair session (Section 6.2).
	Peer string `cbor:"peer,omitempty"`
	// Pending is set on the initiator's side of a pair session until its
	// Welcome was delivered.
	Pending bool `cbor:"pending,omitempty"`
	// Epoch is the group's epoch, checked against the restored state.
	Epoch uint64 `cbor:"epoch"`
}

var (
	encMode = must(cbor.CoreDetEncOptions().EncMode())
	// decMode is strict: unknown or duplicate members are corruption.
	decMode = must(cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		MaxNestedLevels:   4,
		MaxMapPairs:       16,
	}.DecMode())
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// stored is one group as loaded from (or about to be written to) the store.
type stored struct {
	id   []byte
	meta meta
	g    *mls.Group
	tree []byte // the tree bytes as stored, to skip rewriting an unchanged tree
}

func groupKey(id []byte) []byte { return append([]byte{1}, id...) }

// root returns the "session" bucket, creating it in a writable tx.
func root(tx *bolt.Tx) (*bolt.Bucket, error) {
	if !tx.Writable() {
		if b := tx.Bucket(bucketRoot); b != nil {
			return b, nil
		}
		return nil, nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketRoot)
	if err != nil {
		return nil, store.Err(err)
	}
	for _, name := range [][]byte{bucketGroups, bucketPeers, bucketKP, bucketUsed, bucketLR} {
		if _, err := b.CreateBucketIfNotExists(name); err != nil {
			return nil, store.Err(err)
		}
	}
	return b, nil
}

// sub returns the named bucket of the session root, or nil.
func sub(tx *bolt.Tx, name []byte) (*bolt.Bucket, error) {
	r, err := root(tx)
	if err != nil || r == nil {
		return nil, err
	}
	return r.Bucket(name), nil
}

// checksum is SHA-256 over the length-prefixed fields.
func checksum(fields ...[]byte) []byte {
	h := sha256.New()
	h.Write([]byte("torpor session state v1"))
	for _, f := range fields {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(f))))
		h.Write(f)
	}
	return h.Sum(nil)
}

// exists reports whether a group is stored.
func exists(tx *bolt.Tx, id []byte) (bool, error) {
	gs, err := sub(tx, bucketGroups)
	if err != nil || gs == nil {
		return false, err
	}
	return gs.Bucket(groupKey(id)) != nil, nil
}

// load reads and restores a group. A group that is absent returns
// ErrNoSession. A group whose state is unusable is deleted from tx when tx
// is writable (fail closed, draft Section 6.4) and a *CorruptError is
// returned.
func (s *Sessions) load(tx *bolt.Tx, id []byte) (*stored, error) {
	gs, err := sub(tx, bucketGroups)
	if err != nil {
		return nil, err
	}
	var b *bolt.Bucket
	if gs != nil {
		b = gs.Bucket(groupKey(id))
	}
	if b == nil {
		return nil, fmt.Errorf("%w: group %x", ErrNoSession, id)
	}
	st, cerr := s.decode(id, b)
	if cerr != nil {
		if tx.Writable() {
			if err := drop(tx, id); err != nil {
				return nil, err
			}
			cerr.Dropped = true
		}
		return nil, cerr
	}
	return st, nil
}

// decode restores a group from its bucket, or returns a *CorruptError.
func (s *Sessions) decode(id []byte, b *bolt.Bucket) (*stored, *CorruptError) {
	corrupt := func(field string, err error) *CorruptError {
		return &CorruptError{Group: bytes.Clone(id), Field: field, Err: err}
	}
	rawMeta, tree, secrets, sum := b.Get(keyMeta), b.Get(keyTree), b.Get(keySecrets), b.Get(keySum)
	for _, f := range []struct {
		name string
		v    []byte
	}{{"meta", rawMeta}, {"tree", tree}, {"secrets", secrets}, {"sum", sum}} {
		if f.v == nil {
			return nil, corrupt(f.name, errors.New("missing"))
		}
	}
	st := &stored{id: bytes.Clone(id), tree: bytes.Clone(tree)}
	if err := decMode.Unmarshal(rawMeta, &st.meta); err != nil {
		return nil, corrupt("meta", err)
	}
	if !bytes.Equal(sum, checksum(rawMeta, tree, secrets)) {
		c := corrupt("state", errors.New("checksum mismatch (meta, tree, secrets or sum altered)"))
		c.Peer = st.meta.Peer
		return nil, c
	}
	if err := s.checkMeta(&st.meta); err != nil {
		return nil, corrupt("meta", err)
	}
	g, err := mls.RestoreGroup(s.mlsConfig(), &mls.State{Tree: bytes.Clone(tree), Secrets: bytes.Clone(secrets)})
	if err != nil {
		c := corrupt("secrets", err)
		var pe *mls.ParseError
		if errors.Is(err, mls.ErrInvalidTree) || (errors.As(err, &pe) && pe.Struct == "RatchetTree") {
			c.Field = "tree"
		}
		c.Peer = st.meta.Peer
		return nil, c
	}
	if g.Epoch() != st.meta.Epoch {
		c := corrupt("meta", fmt.Errorf("epoch %d, state is at %d", st.meta.Epoch, g.Epoch()))
		c.Peer = st.meta.Peer
		return nil, c
	}
	st.g = g
	return st, nil
}

// checkMeta checks a decoded meta record.
func (s *Sessions) checkMeta(m *meta) error {
	if m.Version != metaVersion {
		return fmt.Errorf("version %d, want %d", m.Version, metaVersion)
	}
	if m.Self != s.self.String() {
		return fmt.Errorf("belongs to %q, not to this agent %s", m.Self, s.self)
	}
	for _, d := range []string{m.Committer, m.Peer} {
		if d == "" {
			continue
		}
		if _, err := did.Parse(d); err != nil {
			return err
		}
	}
	return nil
}

// save writes a group's state into tx: meta, tree (only when it changed)
// and secrets, with a new checksum. Callers make the epoch change and the
// deletion of consumed secrets one transaction by saving the group in the
// transaction that processed the message (RFC 9420, Section 9.2; draft
// Section 6.4).
func (s *Sessions) save(tx *bolt.Tx, st *stored) error {
	state, err := st.g.State()
	if err != nil {
		return err
	}
	st.meta.Version, st.meta.Self, st.meta.Epoch = metaVersion, s.self.String(), st.g.Epoch()
	rawMeta, err := encMode.Marshal(&st.meta)
	if err != nil {
		return err
	}
	r, err := root(tx)
	if err != nil {
		return err
	}
	b, err := r.Bucket(bucketGroups).CreateBucketIfNotExists(groupKey(st.id))
	if err != nil {
		return store.Err(err)
	}
	puts := [][2][]byte{{keyMeta, rawMeta}, {keySecrets, state.Secrets}, {keySum, checksum(rawMeta, state.Tree, state.Secrets)}}
	if !bytes.Equal(b.Get(keyTree), state.Tree) {
		puts = append(puts, [2][]byte{keyTree, state.Tree})
	}
	for _, kv := range puts {
		if err := b.Put(kv[0], kv[1]); err != nil {
			return store.Err(err)
		}
	}
	st.tree = state.Tree
	if st.meta.Peer != "" && !st.meta.Pending {
		return r.Bucket(bucketPeers).Put([]byte(st.meta.Peer), st.id)
	}
	return nil
}

// drop deletes a group and any pair-session index entry naming it.
func drop(tx *bolt.Tx, id []byte) error {
	r, err := root(tx)
	if err != nil {
		return err
	}
	gs := r.Bucket(bucketGroups)
	if gs.Bucket(groupKey(id)) != nil {
		if err := gs.DeleteBucket(groupKey(id)); err != nil {
			return store.Err(err)
		}
	}
	peers := r.Bucket(bucketPeers)
	var stale [][]byte
	err = peers.ForEach(func(k, v []byte) error {
		if bytes.Equal(v, id) {
			stale = append(stale, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range stale {
		if err := peers.Delete(k); err != nil {
			return store.Err(err)
		}
	}
	return nil
}

// peerGroup returns the group ID of the pair session with peer.
func peerGroup(tx *bolt.Tx, peer did.DID) ([]byte, error) {
	ps, err := sub(tx, bucketPeers)
	if err != nil {
		return nil, err
	}
	if ps != nil {
		if id := ps.Get([]byte(peer.String())); id != nil {
			return bytes.Clone(id), nil
		}
	}
	return nil, fmt.Errorf("%w: no pair session with %s", ErrNoSession, peer)
}
