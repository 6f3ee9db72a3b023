// Package tufsign makes and signs TUF metadata with go-tuf/v2's metadata
// package (The Update Framework specification,
// https://theupdateframework.github.io/specification/latest/, Section 4):
// the owner's offline side of agent updates (torporctl update keys and
// update sign-target) and the tests that build repositories. Keys are
// Ed25519, the "ed25519" scheme of Section 4.2. docs/updates.md tells the
// key ceremony.
package tufsign

import (
	"crypto"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// Roles are the public keys and thresholds of a root (Section 4.3).
type Roles struct {
	Root             []ed25519.PublicKey
	RootThreshold    int
	Targets          []ed25519.PublicKey
	TargetsThreshold int
	// Snapshot and Timestamp are the relay's online keys, threshold 1.
	Snapshot, Timestamp ed25519.PublicKey
}

// NewRoot returns root metadata, version 1, with consistent snapshots,
// naming roles' keys, expiring at expires; unsigned.
func NewRoot(roles Roles, expires time.Time) (*metadata.Metadata[metadata.RootType], error) {
	root := metadata.Root(expires.UTC())
	if err := SetRoles(root, roles); err != nil {
		return nil, err
	}
	return root, nil
}

// SetRoles replaces the keys and thresholds of root's four roles.
func SetRoles(root *metadata.Metadata[metadata.RootType], roles Roles) error {
	switch {
	case roles.RootThreshold < 1 || roles.RootThreshold > len(roles.Root):
		return fmt.Errorf("tufsign: root threshold %d of %d keys", roles.RootThreshold, len(roles.Root))
	case roles.TargetsThreshold < 1 || roles.TargetsThreshold > len(roles.Targets):
		return fmt.Errorf("tufsign: targets threshold %d of %d keys", roles.TargetsThreshold, len(roles.Targets))
	case roles.Snapshot == nil || roles.Timestamp == nil:
		return errors.New("tufsign: the relay's snapshot and timestamp keys are needed")
	}
	keys := map[string][]ed25519.PublicKey{
		metadata.ROOT: roles.Root, metadata.TARGETS: roles.Targets,
		metadata.SNAPSHOT: {roles.Snapshot}, metadata.TIMESTAMP: {roles.Timestamp},
	}
	for name := range keys {
		root.Signed.Roles[name] = &metadata.Role{Threshold: 1}
	}
	root.Signed.Keys = map[string]*metadata.Key{}
	for name, pubs := range keys {
		for _, pub := range pubs {
			k, err := metadata.KeyFromPublicKey(pub)
			if err != nil {
				return fmt.Errorf("tufsign: %s key: %w", name, err)
			}
			if err := root.Signed.AddKey(k, name); err != nil {
				return fmt.Errorf("tufsign: %s key: %w", name, err)
			}
		}
	}
	root.Signed.Roles[metadata.ROOT].Threshold = roles.RootThreshold
	root.Signed.Roles[metadata.TARGETS].Threshold = roles.TargetsThreshold
	return nil
}

// Sign replaces m's signatures with those of keys and returns its bytes.
func Sign[T metadata.Roles](m *metadata.Metadata[T], keys ...ed25519.PrivateKey) ([]byte, error) {
	m.ClearSignatures()
	for _, k := range keys {
		s, err := signature.LoadSigner(k, crypto.Hash(0))
		if err != nil {
			return nil, fmt.Errorf("tufsign: %w", err)
		}
		if _, err := m.Sign(s); err != nil {
			return nil, fmt.Errorf("tufsign: %w", err)
		}
	}
	return m.ToBytes(false)
}

// AddTarget lists data as target name in t, with its length, SHA-256
// and custom member key holding custom (Section 4.5).
func AddTarget(t *metadata.Metadata[metadata.TargetsType], name string, data []byte, key string, custom any) error {
	tf, err := metadata.TargetFile().FromBytes(name, data, "sha256")
	if err != nil {
		return fmt.Errorf("tufsign: %w", err)
	}
	raw, err := json.Marshal(map[string]any{key: custom})
	if err != nil {
		return fmt.Errorf("tufsign: custom: %w", err)
	}
	msg := json.RawMessage(raw)
	tf.Custom = &msg
	t.Signed.Targets[name] = tf
	return nil
}
