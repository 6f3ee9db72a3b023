package tuf

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/cjson"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// The top-level role names (Section 2.1.1) and their file names.
const (
	RoleRoot      = "root"
	RoleTimestamp = "timestamp"
	RoleSnapshot  = "snapshot"
	RoleTargets   = "targets"

	SnapshotFile = "snapshot.json"
	TargetsFile  = "targets.json"
)

// Common is what the "signed" object of every role has (Section 4.2,
// "File formats: general principles").
type Common struct {
	Type        string    `json:"_type"`
	SpecVersion string    `json:"spec_version"`
	Version     int64     `json:"version"`
	Expires     time.Time `json:"expires"`
}

// IsExpired reports whether the metadata has expired at ref: ref is after
// its expiry.
func (c *Common) IsExpired(ref time.Time) bool { return ref.After(c.Expires) }

// Root is the root role's "signed" object (Section 4.3).
type Root struct {
	Common
	ConsistentSnapshot bool             `json:"consistent_snapshot"`
	Keys               map[string]*Key  `json:"keys"`
	Roles              map[string]*Role `json:"roles"`
}

// Key is a public key (Section 4.2, "KEY"). Only keytype and scheme
// "ed25519", keyval "public" in hex, verify.
type Key struct {
	Type   string `json:"keytype"`
	Scheme string `json:"scheme"`
	Value  struct {
		Public string `json:"public"`
	} `json:"keyval"`
}

// Role is a role's keys and threshold in the root (Section 4.3, "ROLE").
type Role struct {
	KeyIDs    []string `json:"keyids"`
	Threshold int      `json:"threshold"`
}

// Timestamp is the timestamp role's "signed" object (Section 4.6).
type Timestamp struct {
	Common
	Meta map[string]*MetaFile `json:"meta"`
}

// Snapshot is the snapshot role's "signed" object (Section 4.4).
type Snapshot struct {
	Common
	Meta map[string]*MetaFile `json:"meta"`
}

// MetaFile names a metadata file: its version, and optionally its length
// and hashes (Section 4.4, "METAFILES").
type MetaFile struct {
	Length  int64  `json:"length"`
	Hashes  Hashes `json:"hashes"`
	Version int64  `json:"version"`
}

// Targets is the targets role's "signed" object (Section 4.5). Its
// "delegations", if any, are signed like every other member but not
// followed.
type Targets struct {
	Common
	Targets map[string]*TargetFile `json:"targets"`
}

// TargetFile is a target's length, hashes and custom object (Section 4.5,
// "TARGETS"); Path is its name in the targets object.
type TargetFile struct {
	Length int64           `json:"length"`
	Hashes Hashes          `json:"hashes"`
	Custom json.RawMessage `json:"custom"`
	Path   string          `json:"-"`
}

// Hashes maps a hash algorithm ("sha256", "sha512") to a digest; the JSON
// form of a digest is hex.
type Hashes map[string]HexBytes

// HexBytes are bytes that JSON holds as hex.
type HexBytes []byte

// UnmarshalJSON reads a JSON string of hex digits, an even number of
// them and nothing else (no escapes), as go-tuf/v2 reads it.
func (h *HexBytes) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || len(b)%2 != 0 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("not a string of hex digits")
	}
	d := make([]byte, hex.DecodedLen(len(b)-2))
	if _, err := hex.Decode(d, b[1:len(b)-1]); err != nil {
		return err
	}
	*h = d
	return nil
}

// String is the lower-case hex of h.
func (h HexBytes) String() string { return hex.EncodeToString(h) }

// Signature is one entry of "signatures" (Section 4.2).
type Signature struct {
	KeyID string   `json:"keyid"`
	Sig   HexBytes `json:"sig"`
}

// roleType is the set of "signed" objects.
type roleType interface {
	Root | Timestamp | Snapshot | Targets
}

// Metadata is a role's signed metadata as received: Signed is the parsed
// "signed" object, Signatures the signatures over its canonical form.
type Metadata[T roleType] struct {
	Signed     T
	Signatures []Signature
	// canonical is the OLPC canonical JSON of the "signed" object as
	// received: the bytes the signatures sign (Section 4.2).
	canonical []byte
}

// envelope is the outer object of a metadata file (Section 4.2).
type envelope struct {
	Signed     json.RawMessage `json:"signed"`
	Signatures []Signature     `json:"signatures"`
}

// parse reads b as metadata of role, whose "signed" object is a T. It
// refuses (ErrInvalid) text that is not strict JSON (internal/strictjson:
// no member twice, valid UTF-8, bounded nesting), a member named as one
// Section 4 names but for case (exactNames), another "_type" than role,
// two signatures by one key id, and a "signed" object that has no
// canonical form (a number that is not an integer).
func parse[T roleType](b []byte, role string) (*Metadata[T], error) {
	if err := strictjson.Check(b); err != nil {
		return nil, errorf(ErrInvalid, "%s: %v", role, err)
	}
	if err := exactNames(b, role); err != nil {
		return nil, errorf(ErrInvalid, "%s: %v", role, err)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, errorf(ErrInvalid, "%s: %v", role, err)
	}
	if len(env.Signed) == 0 || bytes.Equal(env.Signed, []byte("null")) {
		return nil, errorf(ErrInvalid, "%s: no signed object", role)
	}
	var typ struct {
		Type *string `json:"_type"`
	}
	if err := json.Unmarshal(env.Signed, &typ); err != nil || typ.Type == nil || *typ.Type != role {
		return nil, errorf(ErrInvalid, "%s: the signed object is not of type %q", role, role)
	}
	m := &Metadata[T]{Signatures: env.Signatures}
	if err := json.Unmarshal(env.Signed, &m.Signed); err != nil {
		return nil, errorf(ErrInvalid, "%s: %v", role, err)
	}
	seen := map[string]bool{}
	for _, s := range env.Signatures {
		if seen[s.KeyID] {
			return nil, errorf(ErrInvalid, "%s: two signatures by key id %s", role, s.KeyID)
		}
		seen[s.KeyID] = true
	}
	c, err := cjson.EncodeCanonical(env.Signed)
	if err != nil {
		return nil, errorf(ErrInvalid, "%s: no canonical form: %v", role, err)
	}
	m.canonical = c
	if err := check(any(&m.Signed)); err != nil {
		return nil, errorf(ErrInvalid, "%s: %v", role, err)
	}
	return m, nil
}

// check refuses the members that parse into nothing usable: a null key,
// role, meta or target entry, and a timestamp that does not name the
// snapshot (Section 4.6: its "meta" names snapshot.json).
func check(signed any) error {
	switch s := signed.(type) {
	case *Root:
		if err := noNil(s.Keys, "key"); err != nil {
			return err
		}
		return noNil(s.Roles, "role")
	case *Timestamp:
		if s.Meta[SnapshotFile] == nil {
			return fmt.Errorf("the timestamp does not name %s", SnapshotFile)
		}
		return noNil(s.Meta, "meta")
	case *Snapshot:
		return noNil(s.Meta, "meta")
	case *Targets:
		for path, t := range s.Targets {
			if t == nil {
				return fmt.Errorf("target %q is null", path)
			}
			t.Path = path
		}
	}
	return nil
}

func noNil[V any](m map[string]*V, what string) error {
	for k, v := range m {
		if v == nil {
			return fmt.Errorf("%s %q is null", what, k)
		}
	}
	return nil
}
