package updaterepo

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
	"github.com/theupdateframework/go-tuf/v2/metadata/trustedmetadata"
)

// SetRoot takes root metadata from the owner: the first one, signed by
// its own root keys, or the next version, signed by the current root's
// keys and its own (TUF specification Section 5.3.4, 5.3.5). The root
// must name this relay's snapshot and timestamp keys; what is published
// is signed again with them (a new snapshot and timestamp).
func (r *Repo) SetRoot(b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.Update(func(tx Txn) error {
		root, err := r.nextRoot(tx, b)
		if err != nil {
			return fmt.Errorf("updaterepo: root: %w", err)
		}
		if err := r.namesRelayKeys(root); err != nil {
			return fmt.Errorf("updaterepo: root version %d: %w", root.Signed.Version, err)
		}
		if err := tx.PutMeta(fmt.Sprintf("%d.root.json", root.Signed.Version), b); err != nil {
			return err
		}
		if err := tx.PutMeta("root.json", b); err != nil {
			return err
		}
		return r.resign(tx)
	})
}

// resign signs a new snapshot and timestamp for the published targets,
// if any, with this relay's keys: after a root that named other online
// keys (a rotation of the relay's keys), what the old keys signed no
// longer verifies.
func (r *Repo) resign(tx Txn) error {
	tb, err := tx.Meta("targets.json")
	if tb == nil || err != nil {
		return err
	}
	targets, err := metadata.Targets().FromBytes(tb)
	if err != nil {
		return fmt.Errorf("updaterepo: the stored targets: %w", err)
	}
	return r.signSnapshot(tx, tb, targets.Signed.Version)
}

func (r *Repo) nextRoot(tx Txn, b []byte) (*metadata.Metadata[metadata.RootType], error) {
	cur, err := tx.Meta("root.json")
	if err != nil {
		return nil, err
	}
	if cur == nil {
		root, err := metadata.Root().FromBytes(b)
		if err != nil {
			return nil, err
		}
		return root, root.VerifyDelegate(metadata.ROOT, root)
	}
	t, err := trustedmetadata.New(cur)
	if err != nil {
		return nil, fmt.Errorf("the stored root: %w", err)
	}
	return t.UpdateRoot(b)
}

// namesRelayKeys checks that root gives the snapshot and timestamp roles
// this relay's keys.
func (r *Repo) namesRelayKeys(root *metadata.Metadata[metadata.RootType]) error {
	for role, k := range map[string]ed25519.PrivateKey{metadata.SNAPSHOT: r.cfg.Snapshot, metadata.TIMESTAMP: r.cfg.Timestamp} {
		key, err := metadata.KeyFromPublicKey(k.Public())
		if err != nil {
			return err
		}
		id, err := key.ID()
		if err != nil {
			return err
		}
		rl := root.Signed.Roles[role]
		if rl == nil || len(rl.KeyIDs) != 1 || rl.KeyIDs[0] != id || rl.Threshold != 1 {
			return fmt.Errorf("its %s role is not this relay's key %s alone (threshold 1)", role, id)
		}
	}
	return nil
}

// Publish takes the owner's signed targets metadata: signed by the
// targets role's threshold (metadata.Root.VerifyDelegate), unexpired,
// newer than the current one, every target's blob held with the length
// and hashes the target states. The relay then signs a snapshot naming it
// and a timestamp naming that snapshot. The current targets again are
// taken as they are, signing nothing.
func (r *Repo) Publish(b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.Update(func(tx Txn) error {
		if cur, err := tx.Meta("targets.json"); err != nil || bytes.Equal(cur, b) {
			return err
		} // published already: publishing again changes nothing
		targets, err := r.checkTargets(tx, b)
		if err != nil {
			return fmt.Errorf("updaterepo: targets: %w", err)
		}
		v := targets.Signed.Version
		if err := tx.PutMeta(fmt.Sprintf("%d.targets.json", v), b); err != nil {
			return err
		}
		if err := tx.PutMeta("targets.json", b); err != nil {
			return err
		}
		return r.signSnapshot(tx, b, v)
	})
}

func (r *Repo) checkTargets(tx Txn, b []byte) (*metadata.Metadata[metadata.TargetsType], error) {
	rootB, err := tx.Meta("root.json")
	if err != nil {
		return nil, err
	}
	if rootB == nil {
		return nil, errors.New("no root yet: the owner's root comes first")
	}
	root, err := metadata.Root().FromBytes(rootB)
	if err != nil {
		return nil, err
	}
	targets, err := metadata.Targets().FromBytes(b)
	if err != nil {
		return nil, err
	}
	if err := root.VerifyDelegate(metadata.TARGETS, targets); err != nil {
		return nil, err
	}
	if now := r.clk.Now(); targets.Signed.IsExpired(now) {
		return nil, fmt.Errorf("version %d expired at %s", targets.Signed.Version, targets.Signed.Expires.UTC().Format("2006-01-02T15:04:05Z"))
	}
	cur, err := tx.Meta("targets.json")
	if err != nil {
		return nil, err
	}
	if cur != nil {
		old, err := metadata.Targets().FromBytes(cur)
		if err != nil {
			return nil, fmt.Errorf("the stored targets: %w", err)
		}
		if targets.Signed.Version <= old.Signed.Version {
			return nil, fmt.Errorf("version %d is not newer than the current %d", targets.Signed.Version, old.Signed.Version)
		}
	}
	for name, tf := range targets.Signed.Targets {
		blob, err := tx.Blob(tf.Hashes["sha256"].String())
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", name, err)
		}
		if blob == nil {
			return nil, fmt.Errorf("target %q: no blob with its sha256 %s (upload it first)", name, tf.Hashes["sha256"])
		}
		if err := tf.VerifyLengthHashes(blob); err != nil {
			return nil, fmt.Errorf("target %q: %w", name, err)
		}
		if err := checkDeltas(tx, tf); err != nil {
			return nil, fmt.Errorf("target %q: %w", name, err)
		}
	}
	return targets, nil
}

// checkDeltas checks that the deltas a target names in its custom fields
// (docs/updates.md, "Delta targets") have their blobs here with the
// length stated (a blob's key is its SHA-256): a device sent to a delta
// the relay lacks would fail to fetch it at every wake.
func checkDeltas(tx Txn, tf *metadata.TargetFiles) error {
	deltas, err := deltasOf(tf)
	if err != nil {
		return err
	}
	for _, d := range deltas {
		blob, err := tx.Blob(d.SHA256)
		switch {
		case err != nil:
			return err
		case blob == nil:
			return fmt.Errorf("no blob with its delta's sha256 %s (upload it first)", d.SHA256)
		case int64(len(blob)) != d.Length:
			return fmt.Errorf("its delta %s has %d bytes, not the %d stated", d.SHA256, len(blob), d.Length)
		}
	}
	return nil
}

// delta is one of a target's deltas as its custom fields name it.
type delta struct {
	SHA256 string `json:"sha256"`
	Length int64  `json:"length"`
}

// deltasOf returns the deltas tf's custom fields name.
func deltasOf(tf *metadata.TargetFiles) ([]delta, error) {
	if tf.Custom == nil {
		return nil, nil
	}
	var c struct {
		Torpor struct {
			Deltas []delta `json:"deltas"`
		} `json:"torpor"`
	}
	if err := json.Unmarshal(*tf.Custom, &c); err != nil {
		return nil, fmt.Errorf("custom: %w", err)
	}
	return c.Torpor.Deltas, nil
}

// notNamed returns an error wrapping ErrNamed when the current targets
// metadata names the blob sha as a target's contents or as a delta.
func notNamed(tx Txn, sha string) error {
	b, err := tx.Meta("targets.json")
	if err != nil || b == nil {
		return err
	}
	targets, err := metadata.Targets().FromBytes(b)
	if err != nil {
		return fmt.Errorf("the stored targets: %w", err)
	}
	v := targets.Signed.Version
	for name, tf := range targets.Signed.Targets {
		if tf.Hashes["sha256"].String() == sha {
			return fmt.Errorf("%w: target %q of targets version %d (publish a targets version without it first)", ErrNamed, name, v)
		}
		deltas, err := deltasOf(tf)
		if err != nil {
			return fmt.Errorf("target %q: %w", name, err)
		}
		for _, d := range deltas {
			if d.SHA256 == sha {
				return fmt.Errorf("%w: a delta of target %q of targets version %d (publish a targets version without it first)", ErrNamed, name, v)
			}
		}
	}
	return nil
}

// signSnapshot signs the next snapshot naming targets (bytes b, version
// v), then the next timestamp.
func (r *Repo) signSnapshot(tx Txn, b []byte, v int64) error {
	next := int64(1)
	cur, err := tx.Meta("snapshot.json")
	if err != nil {
		return err
	}
	if cur != nil {
		old, err := metadata.Snapshot().FromBytes(cur)
		if err != nil {
			return fmt.Errorf("updaterepo: the stored snapshot: %w", err)
		}
		next = old.Signed.Version + 1
	}
	s := metadata.Snapshot(r.clk.Now().UTC().Add(r.cfg.SnapshotExpiry))
	s.Signed.Version = next
	mf, err := metaFile(v, b)
	if err != nil {
		return err
	}
	s.Signed.Meta["targets.json"] = mf
	if _, err := s.Sign(r.snap); err != nil {
		return fmt.Errorf("updaterepo: signing the snapshot: %w", err)
	}
	sb, err := s.ToBytes(false)
	if err != nil {
		return err
	}
	if err := tx.PutMeta(fmt.Sprintf("%d.snapshot.json", next), sb); err != nil {
		return err
	}
	if err := tx.PutMeta("snapshot.json", sb); err != nil {
		return err
	}
	return r.signTimestamp(tx, sb, next)
}

// signTimestamp signs the next timestamp naming the snapshot sb, version v.
// Every signing ends here, so it is here that the current root must name
// this relay's keys: a relay started with other keys than the root names
// (another relay's of the cluster, or new ones before the owner's root
// naming them) signs nothing, and the change it was part of is not made.
func (r *Repo) signTimestamp(tx Txn, sb []byte, v int64) error {
	rb, err := tx.Meta("root.json")
	if err != nil {
		return err
	}
	root, err := metadata.Root().FromBytes(rb)
	if err != nil {
		return fmt.Errorf("updaterepo: the stored root: %w", err)
	}
	if err := r.namesRelayKeys(root); err != nil {
		return fmt.Errorf("updaterepo: not signing: root version %d: %w (every relay sharing the repository needs the keys the root names: --update-snapshot-key, --update-timestamp-key)", root.Signed.Version, err)
	}
	next := int64(1)
	cur, err := tx.Meta("timestamp.json")
	if err != nil {
		return err
	}
	if cur != nil {
		old, err := metadata.Timestamp().FromBytes(cur)
		if err != nil {
			return fmt.Errorf("updaterepo: the stored timestamp: %w", err)
		}
		next = old.Signed.Version + 1
	}
	t := metadata.Timestamp(r.clk.Now().UTC().Add(r.cfg.TimestampExpiry))
	t.Signed.Version = next
	mf, err := metaFile(v, sb)
	if err != nil {
		return err
	}
	t.Signed.Meta["snapshot.json"] = mf
	if _, err := t.Sign(r.ts); err != nil {
		return fmt.Errorf("updaterepo: signing the timestamp: %w", err)
	}
	tb, err := t.ToBytes(false)
	if err != nil {
		return err
	}
	return tx.PutMeta("timestamp.json", tb)
}

// metaFile names b at version v with its length and SHA-256 (TUF
// specification Section 4.4, METAFILES), so that a device can tell it
// from any other file of that version.
func metaFile(v int64, b []byte) (*metadata.MetaFiles, error) {
	tf, err := metadata.TargetFile().FromBytes("meta", b, "sha256")
	if err != nil {
		return nil, err
	}
	m := metadata.MetaFile(v)
	m.Length, m.Hashes = tf.Length, tf.Hashes
	return m, nil
}

// Refresh re-signs what is about to expire: the snapshot (with the same
// targets) when less than half of SnapshotExpiry is left, the timestamp
// when less than half of TimestampExpiry is left. It reports whether it
// signed anything. The relay calls it on a timer.
func (r *Repo) Refresh() (bool, error) { return r.refresh(false) }

// Fresh signs a new timestamp now (and a snapshot if it is due): a
// device that slept past the last timestamp asks for it. One signed less
// than FreshInterval ago is fresh already, so devices asking at once
// cost one signature.
func (r *Repo) Fresh() error {
	_, err := r.refresh(true)
	return err
}

// FreshInterval is how recent a timestamp Fresh leaves as it is.
const FreshInterval = time.Minute

func (r *Repo) refresh(force bool) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	signed := false
	err := r.b.Update(func(tx Txn) error {
		signed = false // fn may run again on a newer view
		sb, tb, targets, err := current(tx)
		if err != nil {
			return err
		}
		if sb == nil || tb == nil || targets == nil {
			return ErrNothingPublished
		}
		s, err := metadata.Snapshot().FromBytes(sb)
		if err != nil {
			return err
		}
		now := r.clk.Now()
		if s.Signed.Expires.Before(now.Add(r.cfg.SnapshotExpiry / 2)) {
			signed = true
			return r.signSnapshot(tx, targets, s.Signed.Meta["targets.json"].Version)
		}
		t, err := metadata.Timestamp().FromBytes(tb)
		if err != nil {
			return err
		}
		fresh := force && t.Signed.Expires.Before(now.Add(r.cfg.TimestampExpiry-FreshInterval))
		if fresh || t.Signed.Expires.Before(now.Add(r.cfg.TimestampExpiry/2)) {
			signed = true
			return r.signTimestamp(tx, sb, s.Signed.Version)
		}
		return nil
	})
	return signed && err == nil, err
}

// current returns the current snapshot, timestamp and targets.
func current(tx Txn) (sb, tb, targets []byte, err error) {
	if sb, err = tx.Meta("snapshot.json"); err != nil {
		return nil, nil, nil, err
	}
	if tb, err = tx.Meta("timestamp.json"); err != nil {
		return nil, nil, nil, err
	}
	targets, err = tx.Meta("targets.json")
	return sb, tb, targets, err
}
