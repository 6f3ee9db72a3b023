package tuf

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"hash"
)

// The key type and signature scheme this package verifies (Section 4.2,
// "KEYTYPE" and "SCHEME": "ed25519").
const (
	KeyTypeEd25519 = "ed25519"
	SchemeEd25519  = "ed25519"
)

// verifyRole checks that m is signed by threshold of the keys root gives
// role (Sections 5.3.4, 5.4.2, 5.5.3, 5.6.3): each of the role's key ids
// counts once, a key listed under two ids counts once, keys the role does
// not list count for nothing. Every key the role lists must be one this
// package can use, and the threshold at least 1; otherwise the role is
// refused as ErrInvalid, whatever the signatures.
func verifyRole[T roleType](root *Root, role string, m *Metadata[T]) error {
	r := root.Roles[role]
	if r == nil || len(r.KeyIDs) == 0 {
		return errorf(ErrInvalid, "the root has no keys for role %s", role)
	}
	if r.Threshold < 1 {
		return errorf(ErrInvalid, "role %s has threshold %d", role, r.Threshold)
	}
	sigs := make(map[string][]byte, len(m.Signatures))
	for _, s := range m.Signatures {
		sigs[s.KeyID] = s.Sig
	}
	signers := map[string]bool{} // by public key, not key id
	for _, id := range r.KeyIDs {
		k := root.Keys[id]
		if k == nil {
			return errorf(ErrInvalid, "role %s lists key %s, which the root does not have", role, id)
		}
		pub, err := k.ed25519()
		if err != nil {
			return errorf(ErrInvalid, "role %s, key %s: %v", role, id, err)
		}
		if sig, ok := sigs[id]; ok && ed25519.Verify(pub, m.canonical, sig) {
			signers[string(pub)] = true
		}
	}
	if len(signers) < r.Threshold {
		return errorf(ErrUnsigned, "%s: signed by %d of the %d keys its threshold needs", role, len(signers), r.Threshold)
	}
	return nil
}

// ed25519 returns k's public key; an error for another type or scheme, or
// a key that is not 32 bytes of hex.
func (k *Key) ed25519() (ed25519.PublicKey, error) {
	if k.Type != KeyTypeEd25519 || k.Scheme != SchemeEd25519 {
		return nil, errorf(ErrInvalid, "key type %q, scheme %q: want %q", k.Type, k.Scheme, KeyTypeEd25519)
	}
	pub, err := hex.DecodeString(k.Value.Public)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, errorf(ErrInvalid, "an ed25519 key is %d bytes of hex", ed25519.PublicKeySize)
	}
	return pub, nil
}

// verifyHashes checks data against every hash of hs; an algorithm other
// than sha256 and sha512 is a mismatch.
func verifyHashes(data []byte, hs Hashes) error {
	for alg, want := range hs {
		var h hash.Hash
		switch alg {
		case "sha256":
			h = sha256.New()
		case "sha512":
			h = sha512.New()
		default:
			return errorf(ErrLengthOrHash, "hash algorithm %q", alg)
		}
		h.Write(data)
		if subtle.ConstantTimeCompare(h.Sum(nil), want) != 1 {
			return errorf(ErrLengthOrHash, "the %s hash", alg)
		}
	}
	return nil
}

// VerifyLengthHashes checks data against the file: its hashes and length
// when the file has them (Section 4.4: both are optional in METAFILES).
func (f *MetaFile) VerifyLengthHashes(data []byte) error {
	if err := verifyHashes(data, f.Hashes); err != nil {
		return err
	}
	if f.Length != 0 && int64(len(data)) != f.Length {
		return errorf(ErrLengthOrHash, "%d bytes, not %d", len(data), f.Length)
	}
	return nil
}

// VerifyLengthHashes checks data against the target's hashes, at least one
// of them, and its length (Section 5.7.3).
func (f *TargetFile) VerifyLengthHashes(data []byte) error {
	if len(f.Hashes) == 0 {
		return errorf(ErrLengthOrHash, "target %s has no hashes", f.Path)
	}
	if err := verifyHashes(data, f.Hashes); err != nil {
		return err
	}
	if int64(len(data)) != f.Length {
		return errorf(ErrLengthOrHash, "target %s: %d bytes, not %d", f.Path, len(data), f.Length)
	}
	return nil
}
