package tuf_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/cjson"
	"github.com/theupdateframework/go-tuf/v2/metadata"
	"github.com/theupdateframework/go-tuf/v2/metadata/trustedmetadata"

	"github.com/torpor-dev/torpor/runtime/update/tuf"
)

// t0 is the reference time of every repository of these tests.
var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// key is a test signing key: an ed25519 key made from a seed, so that the
// fuzz corpus replays with the same keys.
type key struct {
	priv ed25519.PrivateKey
	tuf  *metadata.Key
	id   string
}

func newKey(t testing.TB, seed string) key {
	t.Helper()
	s := sha256.Sum256([]byte(seed))
	priv := ed25519.NewKeyFromSeed(s[:])
	k, err := metadata.KeyFromPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	id, err := k.ID()
	if err != nil {
		t.Fatal(err)
	}
	return key{priv: priv, tuf: k, id: id}
}

// sig is one signature an envelope carries: by k over the canonical form
// of the signed object, under k's id unless id is set.
type sig struct {
	k   key
	id  string
	bad bool // the signature is flipped
}

// envelope returns the metadata file of signed (a go-tuf signed type or
// raw JSON) with sigs.
func envelope(t testing.TB, signed any, sigs ...sig) []byte {
	t.Helper()
	raw, ok := signed.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(signed)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	canon, err := cjson.EncodeCanonical(raw)
	if err != nil {
		canon = raw // no canonical form: both verifiers must refuse it
	}
	type jsig struct {
		KeyID string `json:"keyid"`
		Sig   string `json:"sig"`
	}
	out := struct {
		Signed     json.RawMessage `json:"signed"`
		Signatures []jsig          `json:"signatures"`
	}{Signed: raw, Signatures: []jsig{}}
	for _, s := range sigs {
		b := ed25519.Sign(s.k.priv, canon)
		if s.bad {
			b[0] ^= 1
		}
		id := s.k.id
		if s.id != "" {
			id = s.id
		}
		out.Signatures = append(out.Signatures, jsig{KeyID: id, Sig: fmt.Sprintf("%x", b)})
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// by is one good signature by each of keys.
func by(keys ...key) []sig {
	out := make([]sig, len(keys))
	for i, k := range keys {
		out[i] = sig{k: k}
	}
	return out
}

// setRole gives role keys and threshold in root's signed object.
func setRole(r *metadata.RootType, role string, threshold int, keys ...key) {
	r.Roles[role] = &metadata.Role{Threshold: threshold, KeyIDs: []string{}}
	for _, k := range keys {
		r.Keys[k.id] = k.tuf
		r.Roles[role].KeyIDs = append(r.Roles[role].KeyIDs, k.id)
	}
}

// ecdsaKey is an ecdsa-sha2-nistp256 key as go-tuf writes it.
func ecdsaKey(t testing.TB) (*metadata.Key, string) {
	t.Helper()
	s := sha256.Sum256([]byte("ecdsa"))
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), s[:])
	if err != nil {
		t.Fatal(err)
	}
	k, err := metadata.KeyFromPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := k.ID()
	return k, id
}

// op is one step of a client run: the bytes of a role's metadata and how
// they are loaded.
type op struct {
	role    string // tuf.RoleRoot (UpdateRoot), RoleTimestamp, RoleSnapshot, RoleTargets
	trusted bool   // a snapshot kept from an earlier run (UpdateSnapshot's trusted)
	b       []byte
}

// outcome is a run's result: the class of each step's error ("ok" for
// none) and the state after the last.
type outcome struct {
	newRoot string
	steps   []string
	state   string
}

// The classes of refusal the client tells apart (runtime/update's
// reason.go), plus "order" (a step out of order) and "panic" (go-tuf
// crashed).
const (
	classOK       = "ok"
	classUnsigned = "unsigned"
	classExpired  = "expired"
	classVersion  = "version"
	classEqual    = "equal"
	classLength   = "length-hash"
	classInvalid  = "invalid"
	classOrder    = "order"
	classPanic    = "panic"
)

func oursClass(err error) string {
	switch {
	case err == nil:
		return classOK
	case errors.Is(err, tuf.ErrUnsigned):
		return classUnsigned
	case errors.Is(err, tuf.ErrExpired):
		return classExpired
	case errors.Is(err, tuf.ErrEqualVersion):
		return classEqual
	case errors.Is(err, tuf.ErrVersion):
		return classVersion
	case errors.Is(err, tuf.ErrLengthOrHash):
		return classLength
	case errors.Is(err, tuf.ErrOrder):
		return classOrder
	case errors.Is(err, tuf.ErrInvalid):
		return classInvalid
	}
	return "unclassified: " + err.Error()
}

func goClass(err error) string {
	var (
		unsigned *metadata.ErrUnsignedMetadata
		expired  *metadata.ErrExpiredMetadata
		equal    *metadata.ErrEqualVersionNumber
		version  *metadata.ErrBadVersionNumber
		length   *metadata.ErrLengthOrHashMismatch
		order    *metadata.ErrRuntime
	)
	switch {
	case err == nil:
		return classOK
	case errors.As(err, &unsigned):
		return classUnsigned
	case errors.As(err, &expired):
		return classExpired
	case errors.As(err, &equal):
		return classEqual
	case errors.As(err, &version):
		return classVersion
	case errors.As(err, &length):
		return classLength
	case errors.As(err, &order):
		return classOrder
	}
	return classInvalid
}

// runOurs runs ops through this package.
func runOurs(root []byte, ref time.Time, ops []op) outcome {
	t, err := tuf.New(root, ref)
	if err != nil {
		return outcome{newRoot: oursClass(err)}
	}
	o := outcome{newRoot: classOK}
	for _, s := range ops {
		var err error
		switch s.role {
		case tuf.RoleRoot:
			_, err = t.UpdateRoot(s.b)
		case tuf.RoleTimestamp:
			_, err = t.UpdateTimestamp(s.b)
		case tuf.RoleSnapshot:
			_, err = t.UpdateSnapshot(s.b, s.trusted)
		case tuf.RoleTargets:
			_, err = t.UpdateTargets(s.b)
		}
		o.steps = append(o.steps, oursClass(err))
	}
	o.state = oursState(t)
	return o
}

func oursState(t *tuf.Trusted) string {
	s := fmt.Sprintf("root %d %s consistent=%v", t.Root.Signed.Version, t.Root.Signed.Expires.UTC(), t.Root.Signed.ConsistentSnapshot)
	if t.Timestamp != nil {
		s += fmt.Sprintf("; timestamp %d %s snapshot %d", t.Timestamp.Signed.Version, t.Timestamp.Signed.Expires.UTC(),
			t.Timestamp.Signed.Meta["snapshot.json"].Version)
	}
	if t.Snapshot != nil {
		s += fmt.Sprintf("; snapshot %d %s", t.Snapshot.Signed.Version, t.Snapshot.Signed.Expires.UTC())
		for _, n := range sortedKeys(t.Snapshot.Signed.Meta) {
			s += fmt.Sprintf(" %s=%d", n, t.Snapshot.Signed.Meta[n].Version)
		}
	}
	if t.Targets != nil {
		s += fmt.Sprintf("; targets %d %s", t.Targets.Signed.Version, t.Targets.Signed.Expires.UTC())
		for _, n := range sortedKeys(t.Targets.Signed.Targets) {
			f := t.Targets.Signed.Targets[n]
			s += fmt.Sprintf(" %s:%d:%s:%s", f.Path, f.Length, f.Hashes["sha256"], canonical(f.Custom))
		}
	}
	return s
}

// runGoTUF runs ops through go-tuf/v2's trustedmetadata; a panic ends the
// run with class "panic".
func runGoTUF(root []byte, ref time.Time, ops []op) (o outcome) {
	t, err := func() (t *trustedmetadata.TrustedMetadata, err error) {
		defer recoverAs(&err)
		return trustedmetadata.New(root)
	}()
	if err != nil {
		return outcome{newRoot: classOf(err)}
	}
	t.RefTime = ref
	o.newRoot = classOK
	for _, s := range ops {
		err := func() (err error) {
			defer recoverAs(&err)
			switch s.role {
			case tuf.RoleRoot:
				_, err = t.UpdateRoot(s.b)
			case tuf.RoleTimestamp:
				_, err = t.UpdateTimestamp(s.b)
			case tuf.RoleSnapshot:
				_, err = t.UpdateSnapshot(s.b, s.trusted)
			case tuf.RoleTargets:
				_, err = t.UpdateTargets(s.b)
			}
			return err
		}()
		o.steps = append(o.steps, classOf(err))
	}
	o.state = goState(t)
	return o
}

type panicked struct{ v any }

func (p panicked) Error() string { return fmt.Sprint("panic: ", p.v) }

func recoverAs(err *error) {
	if v := recover(); v != nil {
		*err = panicked{v}
	}
}

func classOf(err error) string {
	if _, ok := err.(panicked); ok {
		return classPanic
	}
	return goClass(err)
}

func goState(t *trustedmetadata.TrustedMetadata) (s string) {
	defer func() {
		if v := recover(); v != nil {
			s = fmt.Sprint("panic: ", v)
		}
	}()
	s = fmt.Sprintf("root %d %s consistent=%v", t.Root.Signed.Version, t.Root.Signed.Expires.UTC(), t.Root.Signed.ConsistentSnapshot)
	if t.Timestamp != nil {
		s += fmt.Sprintf("; timestamp %d %s snapshot %d", t.Timestamp.Signed.Version, t.Timestamp.Signed.Expires.UTC(),
			t.Timestamp.Signed.Meta["snapshot.json"].Version)
	}
	if t.Snapshot != nil {
		s += fmt.Sprintf("; snapshot %d %s", t.Snapshot.Signed.Version, t.Snapshot.Signed.Expires.UTC())
		for _, n := range sortedKeys(t.Snapshot.Signed.Meta) {
			s += fmt.Sprintf(" %s=%d", n, t.Snapshot.Signed.Meta[n].Version)
		}
	}
	if tg := t.Targets[metadata.TARGETS]; tg != nil {
		s += fmt.Sprintf("; targets %d %s", tg.Signed.Version, tg.Signed.Expires.UTC())
		for _, n := range sortedKeys(tg.Signed.Targets) {
			f := tg.Signed.Targets[n]
			var custom []byte
			if f.Custom != nil {
				custom = *f.Custom
			}
			s += fmt.Sprintf(" %s:%d:%s:%s", f.Path, f.Length, f.Hashes["sha256"], canonical(custom))
		}
	}
	return s
}

func canonical(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	c, err := cjson.EncodeCanonical(json.RawMessage(b))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(c)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
