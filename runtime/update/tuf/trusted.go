package tuf

import (
	"fmt"
	"time"
)

// Trusted is the trusted metadata of one run of the client workflow
// (Section 5): the root, then the timestamp, snapshot and targets as they
// are loaded. RefTime is the time expiry is judged by (Section 5.1: "the
// time at which the client began the update cycle"; on the device, its
// trusted time).
type Trusted struct {
	Root      *Metadata[Root]
	Timestamp *Metadata[Timestamp]
	Snapshot  *Metadata[Snapshot]
	Targets   *Metadata[Targets]
	RefTime   time.Time
}

// New returns the trusted metadata starting from rootJSON, a root the
// device trusts (Section 5.2: "Load the trusted root metadata file"),
// which must be signed by the threshold of its own root keys. Its expiry
// is not judged here: a device may hold an expired root and update it
// (Section 5.3.10 judges the final one).
func New(rootJSON []byte, ref time.Time) (*Trusted, error) {
	root, err := parse[Root](rootJSON, RoleRoot)
	if err != nil {
		return nil, err
	}
	if err := verifyRole(&root.Signed, RoleRoot, root); err != nil {
		return nil, err
	}
	return &Trusted{Root: root, RefTime: ref}, nil
}

// UpdateRoot takes root version N+1 (Section 5.3): signed by the threshold
// of the trusted root's root keys (5.3.4) and of its own (5.3.5), and of
// version N+1 exactly (5.3.5). Its expiry is not judged here (5.3.10 is
// the caller's, after the last root). It returns ErrOrder once a
// timestamp is loaded.
func (t *Trusted) UpdateRoot(b []byte) (*Metadata[Root], error) {
	if t.Timestamp != nil {
		return nil, errorf(ErrOrder, "a root after the timestamp")
	}
	root, err := parse[Root](b, RoleRoot)
	if err != nil {
		return nil, err
	}
	if err := verifyRole(&t.Root.Signed, RoleRoot, root); err != nil {
		return nil, fmt.Errorf("root version %d by the trusted root: %w", root.Signed.Version, err)
	}
	if want := t.Root.Signed.Version + 1; root.Signed.Version != want {
		return nil, errorf(ErrVersion, "root version %d, want %d", root.Signed.Version, want)
	}
	if err := verifyRole(&root.Signed, RoleRoot, root); err != nil {
		return nil, fmt.Errorf("root version %d by itself: %w", root.Signed.Version, err)
	}
	t.Root = root
	return root, nil
}

// UpdateTimestamp takes a timestamp (Section 5.4): the final root must not
// have expired (5.3.10); it must be signed by the root's timestamp keys
// (5.4.2); its version must not be below the trusted timestamp's
// (ErrVersion) nor equal to it (ErrEqualVersion: the trusted one stays,
// 5.4.3.2), and the snapshot version it names not below the trusted one's
// (5.4.3.1). It is then trusted, and ErrExpired is returned if it has
// expired (5.4.4): it still guards against a rollback.
func (t *Trusted) UpdateTimestamp(b []byte) (*Metadata[Timestamp], error) {
	if t.Snapshot != nil {
		return nil, errorf(ErrOrder, "a timestamp after the snapshot")
	}
	if t.Root.Signed.IsExpired(t.RefTime) {
		return nil, errorf(ErrExpired, "root version %d", t.Root.Signed.Version)
	}
	ts, err := parse[Timestamp](b, RoleTimestamp)
	if err != nil {
		return nil, err
	}
	if err := verifyRole(&t.Root.Signed, RoleTimestamp, ts); err != nil {
		return nil, err
	}
	if old := t.Timestamp; old != nil {
		switch v, was := ts.Signed.Version, old.Signed.Version; {
		case v < was:
			return nil, errorf(ErrVersion, "timestamp version %d, below the trusted %d", v, was)
		case v == was:
			return nil, errorf(ErrEqualVersion, "timestamp version %d", v)
		}
		if v, was := ts.Signed.Meta[SnapshotFile].Version, old.Signed.Meta[SnapshotFile].Version; v < was {
			return nil, errorf(ErrVersion, "the timestamp names snapshot version %d, below the trusted %d", v, was)
		}
	}
	t.Timestamp = ts
	if ts.Signed.IsExpired(t.RefTime) {
		return nil, errorf(ErrExpired, "timestamp version %d", ts.Signed.Version)
	}
	return ts, nil
}

// UpdateSnapshot takes a snapshot (Section 5.5). Unless trusted (the copy
// kept from an earlier run), its length and hashes must be the ones the
// timestamp names (5.5.2). It must be signed by the root's snapshot keys
// (5.5.3), and list every file the trusted snapshot lists at no lower
// version (5.5.5). It is then trusted, and ErrExpired (5.5.6) or
// ErrVersion (not the version the timestamp names, 5.5.4) is returned if
// it is not the final snapshot.
func (t *Trusted) UpdateSnapshot(b []byte, trusted bool) (*Metadata[Snapshot], error) {
	if t.Timestamp == nil {
		return nil, errorf(ErrOrder, "a snapshot before the timestamp")
	}
	if t.Targets != nil {
		return nil, errorf(ErrOrder, "a snapshot after the targets")
	}
	if t.Timestamp.Signed.IsExpired(t.RefTime) {
		return nil, errorf(ErrExpired, "timestamp version %d", t.Timestamp.Signed.Version)
	}
	if !trusted {
		if err := t.Timestamp.Signed.Meta[SnapshotFile].VerifyLengthHashes(b); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	s, err := parse[Snapshot](b, RoleSnapshot)
	if err != nil {
		return nil, err
	}
	if err := verifyRole(&t.Root.Signed, RoleSnapshot, s); err != nil {
		return nil, err
	}
	if err := noRollback(t.Snapshot, s); err != nil {
		return nil, err
	}
	t.Snapshot = s
	if err := t.finalSnapshot(); err != nil {
		return nil, err
	}
	return s, nil
}

// noRollback checks that s lists every file old lists, at no lower
// version (Section 5.5.5).
func noRollback(old, s *Metadata[Snapshot]) error {
	if old == nil {
		return nil
	}
	for name, was := range old.Signed.Meta {
		m, ok := s.Signed.Meta[name]
		if !ok {
			return errorf(ErrInvalid, "the snapshot no longer lists %s", name)
		}
		if m.Version < was.Version {
			return errorf(ErrVersion, "the snapshot names %s version %d, below the trusted %d", name, m.Version, was.Version)
		}
	}
	return nil
}

// finalSnapshot checks the trusted snapshot has not expired (Section
// 5.5.6) and is the version the timestamp names (5.5.4).
func (t *Trusted) finalSnapshot() error {
	s := t.Snapshot
	if s.Signed.IsExpired(t.RefTime) {
		return errorf(ErrExpired, "snapshot version %d", s.Signed.Version)
	}
	if want := t.Timestamp.Signed.Meta[SnapshotFile].Version; s.Signed.Version != want {
		return errorf(ErrVersion, "snapshot version %d, where the timestamp names %d", s.Signed.Version, want)
	}
	return nil
}

// UpdateTargets takes the top-level targets (Section 5.6): the trusted
// snapshot must be final (5.5.4, 5.5.6) and name targets.json, whose
// length and hashes, when it gives them, these bytes must have (5.6.2);
// signed by the root's targets keys (5.6.3), of the version the snapshot
// names (5.6.4) and not expired (5.6.5).
func (t *Trusted) UpdateTargets(b []byte) (*Metadata[Targets], error) {
	if t.Snapshot == nil {
		return nil, errorf(ErrOrder, "the targets before the snapshot")
	}
	if err := t.finalSnapshot(); err != nil {
		return nil, err
	}
	meta := t.Snapshot.Signed.Meta[TargetsFile]
	if meta == nil {
		return nil, errorf(ErrInvalid, "the snapshot does not name %s", TargetsFile)
	}
	if err := meta.VerifyLengthHashes(b); err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	tg, err := parse[Targets](b, RoleTargets)
	if err != nil {
		return nil, err
	}
	if err := verifyRole(&t.Root.Signed, RoleTargets, tg); err != nil {
		return nil, err
	}
	if tg.Signed.Version != meta.Version {
		return nil, errorf(ErrVersion, "targets version %d, where the snapshot names %d", tg.Signed.Version, meta.Version)
	}
	if tg.Signed.IsExpired(t.RefTime) {
		return nil, errorf(ErrExpired, "targets version %d", tg.Signed.Version)
	}
	t.Targets = tg
	return tg, nil
}

// FileName is the name of a role's metadata file at version v (name is
// "snapshot.json" or "targets.json"): with consistent snapshots
// (Section 5.5.1, 5.6.1; Section 6.2) "v.name", otherwise name.
func (r *Root) FileName(v int64, name string) string {
	if r.ConsistentSnapshot {
		return fmt.Sprintf("%d.%s", v, name)
	}
	return name
}
