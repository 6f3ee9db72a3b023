package jsstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/updaterepo"
)

// Updates is store/updaterepo's Backend on JetStream: the update
// repository every relay of a cluster serves (docs/updates.md, "The
// relay's repository"). In the agents bucket (Config.Prefix's _AGENTS):
//
//	up.head       the repository's head (JSON): the current root.json,
//	              targets.json, snapshot.json and timestamp.json, the
//	              versions of the first three, the blobs held with their
//	              lengths and the bytes used; changed only by
//	              compare-and-swap on its revision
//	up.m.<name>   an earlier head's versioned file (N.root.json,
//	              N.targets.json, N.snapshot.json)
//
// and the blobs in the object store bucket Config.Prefix's _UPDATES, each
// as objects <sha256>.<k> of BlobPart bytes, so that a range read (a
// device resuming a download) reads the parts it needs and not the blob
// from its start, as nats.go's Get of one object would. A part's one
// chunk has a subject of its own, <sha256>-<k> (putPart), so relays
// uploading a blob at once leave no chunk behind.
//
// A tenant's repository (Partition, updaterepo.Repo.Tenant) is the same
// under keys of its own: upt.<key>.head, upt.<key>.m.<name> and objects
// t.<key>.<sha256>.<k> (chunks on t_<key>_<sha256>-<k>), where key is
// updaterepo.TenantKey of its owner.
//
// A head's versioned files are served from the head while it is current
// and written to their keys by the writer that replaces it, before its
// compare-and-swap (the bytes are the head's, so writers racing write the
// same): a relay that dies between its swap and anything else leaves
// nothing unserved. A blob's bytes are counted in the head before its
// parts are written, so the bound is never passed; a blob whose parts a
// dead relay did not finish is written again by its next upload.
type Updates struct {
	c   *Conn
	obs jetstream.ObjectStore
	max int64
	// head and meta are the keys of this repository's head and the
	// prefix of its earlier files, obj the prefix of its blobs' objects:
	// up.head, up.m. and none for the relay's own; a tenant's
	// (Partition) upt.<key>.head, upt.<key>.m. and t.<key>.
	head, meta, obj string

	cache *partCache // shared by the relay's repository and its partitions

	// removed, when set, is called by RemoveBlob once the blob left the
	// head, before its parts are purged: a test's seam for a removal that
	// outlasts the tenant's lock.
	removed func(sha string)
}

// partCache is what a relay keeps of the blobs it read. A blob's length
// and parts never change (its name is its SHA-256), so each relay keeps
// the lengths it read and the last CachedParts parts: devices reading
// one build in turn read it from NATS once. Both are keyed by object
// name, so that one repository's never answer for another's.
type partCache struct {
	mu      sync.Mutex // mu guards all following fields
	lengths map[string]int64
	parts   map[string][]byte
	order   []string // of parts, oldest first
}

// CachedParts is how many blob parts (of BlobPart bytes) a relay keeps in
// memory: 8 MiB.
const CachedParts = 64

var (
	_ updaterepo.Backend     = (*Updates)(nil)
	_ updaterepo.Partitioner = (*Updates)(nil)
)

// BlobPart is the size of a blob's parts in the object store (one chunk
// of nats.go's object store each).
const BlobPart = 128 << 10

const (
	// opTimeout bounds one call of a store whose interface takes no
	// context: the update repository's Backend, the tenants' Store.
	opTimeout = 30 * time.Second
)

// head is up.head's value.
type head struct {
	Used     int64             `json:"used"`
	Files    map[string][]byte `json:"files,omitempty"`
	Versions map[string]int64  `json:"versions,omitempty"`
	Blobs    map[string]int64  `json:"blobs,omitempty"`
}

// current are the files a head holds; the others are versioned.
var current = map[string]bool{"root.json": true, "targets.json": true, "snapshot.json": true, "timestamp.json": true}

// versioned matches N.root.json, N.targets.json, N.snapshot.json.
var versioned = regexp.MustCompile(`^([1-9][0-9]{0,18})\.(root|targets|snapshot)\.json$`)

// Updates returns the update repository's backend on c, creating the
// object store bucket when it is missing (and checking it as Open checks
// the streams), bounded to maxBytes of metadata and blobs.
func (c *Conn) Updates(ctx context.Context, maxBytes int64) (*Updates, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("jsstore: update repository bound %d: want a positive number of bytes", maxBytes)
	}
	var obs jetstream.ObjectStore
	err := c.retrySetup(ctx, func(ctx context.Context) (err error) {
		if obs, err = c.objects(ctx); err != nil {
			return err
		}
		return c.canWriteUpdates(ctx)
	})
	if perr := c.refused.load(); err != nil && perr != nil {
		return nil, fmt.Errorf("%w: the NATS user lacks the update repository's permissions (publish $O.%s.>, docs/scale-out.md): %v", err, c.n.updates, perr)
	}
	if err != nil {
		return nil, err
	}
	return &Updates{c: c, obs: obs, max: maxBytes, head: "up.head", meta: "up.m.",
		cache: &partCache{lengths: map[string]int64{}, parts: map[string][]byte{}}}, nil
}

// Partition implements updaterepo.Partitioner: the repository key (a
// tenant's, updaterepo.TenantKey) in the same bucket and object store,
// under keys upt.<key>.head and upt.<key>.m.<name> and objects
// t.<key>.<sha256>.<k>, bounded as u is, sharing u's cache.
func (u *Updates) Partition(key string) (updaterepo.Backend, error) {
	if !kvKeyPart.MatchString(key) {
		return nil, fmt.Errorf("jsstore: update repository partition %q: want letters, digits, '-' and '_'", key)
	}
	return &Updates{c: u.c, obs: u.obs, max: u.max, head: "upt." + key + ".head", meta: "upt." + key + ".m.",
		obj: "t." + key + ".", cache: u.cache}, nil
}

var kvKeyPart = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// BlobBytes implements updaterepo.Backend: the lengths in the head.
func (u *Updates) BlobBytes() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h, _, err := u.readHead(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, l := range h.Blobs {
		n += l
	}
	return n, nil
}

// objects returns the blobs' object store, created or checked: file
// storage, the Conn's replicas, direct gets off (reads from the leader).
func (c *Conn) objects(ctx context.Context) (jetstream.ObjectStore, error) {
	name := c.n.updates
	_, err := c.js.ObjectStore(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		err = c.awaitPlacement(ctx, func() error {
			_, err := c.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: name,
				Description: "torpor-relay: the update repository's blobs", Storage: jetstream.FileStorage, Replicas: c.replicas})
			if errors.Is(err, jetstream.ErrBucketExists) {
				return nil
			}
			return err
		})
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrNoPeers || apiErr.ErrorCode == jsErrReplicasNotSupported) {
			return nil, fmt.Errorf("%w: creating object store %s with %d replicas: %v", ErrDurability, name, c.replicas, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jsstore: object store %s: %w", name, err)
	}
	s, err := c.js.Stream(ctx, "OBJ_"+name)
	if err != nil {
		return nil, fmt.Errorf("jsstore: object store %s: %w", name, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Replicas < c.replicas || cfg.Storage != jetstream.FileStorage {
		return nil, fmt.Errorf("%w: object store %s has %d replicas (storage %v), want %d on file", ErrDurability, name, cfg.Replicas, cfg.Storage, c.replicas)
	}
	if cfg.AllowDirect {
		cfg.AllowDirect = false
		if _, err = c.js.UpdateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("jsstore: object store %s: turning direct gets off: %w", name, err)
		}
	}
	return c.js.ObjectStore(ctx, name) // bound again, to read from the leader
}

// canWriteUpdates checks that the server lets this user write the
// object store, without writing (as canWriteShared does): the probe
// expects a last sequence no subject has.
func (c *Conn) canWriteUpdates(ctx context.Context) error {
	subj := "$O." + c.n.updates + ".M.probe"
	_, err := c.js.PublishMsg(ctx, &nats.Msg{Subject: subj}, jetstream.WithExpectStream("OBJ_"+c.n.updates),
		jetstream.WithExpectLastSequencePerSubject(math.MaxUint64))
	switch {
	case isConflict(err):
		return nil
	case err == nil:
		return fmt.Errorf("jsstore: object store %s stored a write expecting sequence %d", c.n.updates, uint64(math.MaxUint64))
	}
	return fmt.Errorf("jsstore: writing to object store %s: %w", c.n.updates, err)
}

// readHead returns the head and its revision (0: none yet).
func (u *Updates) readHead(ctx context.Context) (*head, uint64, error) {
	h := &head{}
	e, err := u.c.kv.Get(ctx, u.head)
	if isMissing(err) {
		return h, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("jsstore: the update repository's head: %w", err)
	}
	if err := json.Unmarshal(e.Value(), h); err != nil {
		return nil, 0, fmt.Errorf("jsstore: the update repository's head (revision %d): %w", e.Revision(), err)
	}
	return h, e.Revision(), nil
}

func (h *head) clone() *head {
	return &head{Used: h.Used, Files: maps.Clone(h.Files), Versions: maps.Clone(h.Versions), Blobs: maps.Clone(h.Blobs)}
}

// jsTxn is one Update or View over a copy of the head.
type jsTxn struct {
	u       *Updates
	ctx     context.Context
	h       *head
	changed bool
	view    bool
}

func (t *jsTxn) Meta(name string) ([]byte, error) {
	if current[name] {
		return t.h.Files[name], nil
	}
	m := versioned.FindStringSubmatch(name)
	if m == nil {
		return nil, nil
	}
	if v, _ := strconv.ParseInt(m[1], 10, 64); t.h.Versions[m[2]+".json"] == v {
		return t.h.Files[m[2]+".json"], nil
	}
	e, err := t.u.c.kv.Get(t.ctx, t.u.meta+name)
	if isMissing(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jsstore: update metadata %s: %w", name, err)
	}
	return e.Value(), nil
}

// PutMeta writes a current file into the head; a versioned file only
// counts its bytes and names its version: its bytes are the current
// file's, which the same change writes (store/updaterepo signs and puts
// both), and go to its key when a later change replaces the head.
func (t *jsTxn) PutMeta(name string, b []byte) error {
	if t.view {
		return errors.New("jsstore: a write in a view of the update repository")
	}
	n := t.h.Used + int64(len(b))
	m := versioned.FindStringSubmatch(name)
	switch {
	case current[name]:
		n -= int64(len(t.h.Files[name]))
	case m == nil:
		return fmt.Errorf("jsstore: update metadata %q: not a file the repository keeps", name)
	}
	if n > t.u.max {
		return fmt.Errorf("%w: %d bytes would make %d of %d", updaterepo.ErrFull, len(b), n, t.u.max)
	}
	t.h.Used, t.changed = n, true
	if m != nil {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		t.h.Versions = setIn(t.h.Versions, m[2]+".json", v)
		return nil
	}
	t.h.Files = setIn(t.h.Files, name, bytes.Clone(b))
	return nil
}

func setIn[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

func (t *jsTxn) Blob(sha string) ([]byte, error) {
	n, ok := t.h.Blobs[sha]
	if !ok {
		return nil, nil
	}
	return t.u.readRange(t.ctx, sha, n, 0, n)
}

func (t *jsTxn) BlobLen(sha string) (int64, bool, error) {
	n, ok := t.h.Blobs[sha]
	return n, ok, nil
}

// Update implements updaterepo.Backend: fn runs on the head read, and its
// result replaces that head by compare-and-swap, or fn runs again on the
// newer head another relay wrote.
func (u *Updates) Update(fn func(updaterepo.Txn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return u.update(ctx, func(t *jsTxn) error { return fn(t) })
}

func (u *Updates) update(ctx context.Context, fn func(*jsTxn) error) error {
	for {
		h, rev, err := u.readHead(ctx)
		if err != nil {
			return err
		}
		t := &jsTxn{u: u, ctx: ctx, h: h.clone()}
		if err := fn(t); err != nil || !t.changed {
			return err
		}
		err = u.swap(ctx, h, t.h, rev)
		if !errors.Is(err, errConflict) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("jsstore: the update repository's head kept changing: %w", ctx.Err())
		}
	}
}

// swap writes the old head's versioned files to their keys, then next
// over old at revision rev; errConflict when another writer came first.
func (u *Updates) swap(ctx context.Context, old, next *head, rev uint64) error {
	for kind, v := range old.Versions {
		if next.Versions[kind] == v {
			continue // still current: served from the head
		}
		k := fmt.Sprintf("%s%d.%s", u.meta, v, kind)
		if _, err := u.c.kv.Get(ctx, k); err == nil {
			continue
		} else if !isMissing(err) {
			return fmt.Errorf("jsstore: update metadata %s: %w", k, err)
		}
		if _, err := u.c.kv.Put(ctx, k, old.Files[kind]); err != nil {
			return fmt.Errorf("jsstore: update metadata %s: %w", k, err)
		}
	}
	b, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if max := u.c.nc.MaxPayload() - 4096; int64(len(b)) > max {
		return fmt.Errorf("jsstore: the update repository's head would be %d bytes, more than a NATS message holds (%d, max_payload less room for headers): fewer targets in targets.json", len(b), max)
	}
	if rev == 0 {
		_, err = u.c.kv.Create(ctx, u.head, b)
	} else {
		_, err = u.c.kv.Update(ctx, u.head, b, rev)
	}
	if isRevisionMismatch(err) || errors.Is(err, jetstream.ErrKeyExists) {
		return errConflict
	}
	if err != nil {
		return fmt.Errorf("jsstore: the update repository's head (%d bytes): %w", len(b), err)
	}
	return nil
}

// View implements updaterepo.Backend.
func (u *Updates) View(fn func(updaterepo.Txn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h, _, err := u.readHead(ctx)
	if err != nil {
		return err
	}
	return fn(&jsTxn{u: u, ctx: ctx, h: h, view: true})
}

// Used implements updaterepo.Backend.
func (u *Updates) Used() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h, _, err := u.readHead(ctx)
	if err != nil {
		return 0, err
	}
	return h.Used, nil
}

// Close implements updaterepo.Backend; it does not close the connection.
func (u *Updates) Close() error { return nil }

// AddBlob implements updaterepo.Backend: the blob's bytes are counted in
// the head first (ErrFull past the bound), then its parts are written.
// When the blob was in the head already (an upload of it again, or one
// racing it), parts already there with their digest are kept. When this
// upload put it in the head, every part is written anew: parts already
// there may be a removal's, still purging them (RemoveBlob), which purges
// only what was written before it took the blob out of the head.
func (u *Updates) AddBlob(sha string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n := int64(len(data))
	fresh := false
	err := u.update(ctx, func(t *jsTxn) error {
		if _, ok := t.h.Blobs[sha]; ok {
			fresh = false
			return nil
		}
		fresh = true
		if used := t.h.Used + n; used > u.max {
			return fmt.Errorf("%w: %d bytes would make %d of %d", updaterepo.ErrFull, n, used, u.max)
		}
		t.h.Used, t.changed = t.h.Used+n, true
		t.h.Blobs = setIn(t.h.Blobs, sha, n)
		return nil
	})
	if err != nil {
		return err
	}
	for k := int64(0); k*BlobPart < n; k++ {
		if err := u.putPart(ctx, sha, k, data[k*BlobPart:min((k+1)*BlobPart, n)], fresh); err != nil {
			return fmt.Errorf("jsstore: blob %s part %d: %w", sha, k, err)
		}
	}
	return nil
}

// RemoveBlob implements updaterepo.Backend: the blob is taken out of the
// head by compare-and-swap (check runs on the head read, again if another
// writer came first), so its bytes are given back and no Publish can name
// it from then on; then each part's object is purged, its info and its
// chunk both, and forgotten by the cache. A relay that dies between the
// two leaves parts the head does not count; the next upload of the blob
// writes them anew (AddBlob), and a removal of it again is ErrNotFound.
//
// The purges are fenced: they remove only the messages of the object
// store's stream up to its last sequence read before the blob left the
// head (a purge by subject up to a sequence, WithPurgeSequence). An
// upload of the blob again can only put it back in the head after that,
// so whatever it writes comes later in the stream and survives a removal
// still purging: one that outlasted the tenant's lock (10 s) while an
// upload took the lock after it.
//
// Before each part's purge the head is read again, and once the blob is
// back in it the removal stops and leaves the parts that remain: an
// upload by a relay of the previous release (docs/upgrades.md) keeps the
// parts it finds there rather than writing them anew, so a purge after
// its head swap would take parts it counts on. Only a part whose purge
// had begun before that swap can still be lost to such an upload. The
// check costs a read of the head per part, beside the part's two purges.
func (u *Updates) RemoveBlob(sha string, check func(updaterepo.Txn) error) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s, err := u.c.js.Stream(ctx, "OBJ_"+u.c.n.updates)
	if err != nil {
		return 0, err
	}
	si, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	fence := si.State.LastSeq + 1 // purge below this sequence only
	var n int64
	err = u.update(ctx, func(t *jsTxn) error {
		l, ok := t.h.Blobs[sha]
		if !ok {
			return fmt.Errorf("blob %s: %w", sha, updaterepo.ErrNotFound)
		}
		if err := check(t); err != nil {
			return err
		}
		n = l
		delete(t.h.Blobs, sha)
		t.h.Used, t.changed = t.h.Used-l, true
		return nil
	})
	if err != nil {
		return 0, err
	}
	u.forget(sha, n)
	if u.removed != nil {
		u.removed(sha)
	}
	for k := int64(0); k*BlobPart < n; k++ {
		h, _, err := u.readHead(ctx)
		if err != nil {
			return n, err
		}
		if _, back := h.Blobs[sha]; back {
			return n, nil // uploaded again: the parts left are the upload's
		}
		if err := u.purgePart(ctx, s, sha, k, fence); err != nil {
			return n, fmt.Errorf("jsstore: blob %s part %d: %w", sha, k, err)
		}
	}
	return n, nil
}

// purgePart removes part k of blob sha from the object store's stream s,
// the messages below sequence fence only (RemoveBlob): its info first,
// then the chunk it named (a relay that stops between the two leaves a
// chunk that the part's next upload replaces, putChunk; the other order
// could leave info naming a chunk that is gone, which putPart would
// keep). Nothing stays behind, not even nats.go's tombstone of a deleted
// object.
func (u *Updates) purgePart(ctx context.Context, s jetstream.Stream, sha string, k int64, fence uint64) error {
	name := u.partName(sha, k)
	info, err := u.obs.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	meta := "$O." + u.c.n.updates + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(meta), jetstream.WithPurgeSequence(fence)); err != nil {
		return err
	}
	return s.Purge(ctx, jetstream.WithPurgeSubject("$O."+u.c.n.updates+".C."+info.NUID), jetstream.WithPurgeSequence(fence))
}

// forget drops the cache's length and parts of blob sha (n bytes).
func (u *Updates) forget(sha string, n int64) {
	c := u.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.lengths, u.obj+sha)
	for k := int64(0); k*BlobPart < n; k++ {
		delete(c.parts, u.partName(sha, k))
	}
	c.order = slices.DeleteFunc(c.order, func(name string) bool { _, ok := c.parts[name]; return !ok })
}

// putPart writes part k of blob sha as an object of one chunk, unless it
// is there already with its digest. nats.go's Put would write the chunk
// under a NUID it draws, so two relays uploading one blob at once would
// each write a chunk and the metadata written last would name only one:
// the other chunk would stay in the stream, named by nothing. Here the
// chunk's subject is the part's own (partNUID) and is written only if it
// holds nothing yet, so racing writers write one chunk and the same
// metadata. The layout is the object store's (NATS ADR-20,
// https://github.com/nats-io/nats-architecture-and-design/blob/main/adr/ADR-20.md):
// chunks on $O.<bucket>.C.<nuid>, the object's info on
// $O.<bucket>.M.<base64url(name)>, the last one kept (rollup). A fresh
// part (AddBlob) is written anew even when it is there: its chunk and
// info then come after any removal's fence.
func (u *Updates) putPart(ctx context.Context, sha string, k int64, part []byte, fresh bool) error {
	name, nuid, sum := u.partName(sha, k), u.partNUID(sha, k), digest(part)
	old, err := u.obs.GetInfo(ctx, name)
	switch {
	case err == nil && old.Size == uint64(len(part)) && old.Digest == sum && !fresh:
		return nil
	case err != nil && !errors.Is(err, jetstream.ErrObjectNotFound):
		return err
	}
	if fresh {
		err = u.putChunkAnew(ctx, nuid, part)
	} else {
		err = u.putChunk(ctx, nuid, part)
	}
	if err != nil {
		return err
	}
	info := jetstream.ObjectInfo{ObjectMeta: jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: BlobPart}},
		Bucket: u.c.n.updates, NUID: nuid, Size: uint64(len(part)), ModTime: time.Now().UTC(), Chunks: 1, Digest: sum}
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	m := nats.NewMsg("$O." + u.c.n.updates + ".M." + base64.URLEncoding.EncodeToString([]byte(name)))
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Data = b
	if _, err := u.c.js.PublishMsg(ctx, m, jetstream.WithExpectStream("OBJ_"+u.c.n.updates)); err != nil {
		return err
	}
	if old != nil && old.NUID != nuid {
		// An earlier object of this name (written by nats.go's Put, or
		// damaged): its chunks are named by nothing now.
		return u.purgeChunks(ctx, old.NUID)
	}
	return nil
}

// putChunk writes part as the one chunk on nuid's subject, unless the
// subject holds a chunk already: another relay's upload of the same part,
// or one cut off before its metadata. A chunk there that is not part (it
// cannot be: the subject names the blob's SHA-256 and the part's index)
// is replaced.
func (u *Updates) putChunk(ctx context.Context, nuid string, part []byte) error {
	subj := "$O." + u.c.n.updates + ".C." + nuid
	for range 2 {
		_, err := u.c.js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: part}, jetstream.WithExpectStream("OBJ_"+u.c.n.updates),
			jetstream.WithExpectLastSequencePerSubject(0))
		if !isConflict(err) {
			return err
		}
		s, err := u.c.js.Stream(ctx, "OBJ_"+u.c.n.updates)
		if err != nil {
			return err
		}
		m, err := s.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			return err
		}
		if bytes.Equal(m.Data, part) {
			return nil
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
			return err
		}
	}
	return fmt.Errorf("the chunk on %s kept changing", subj)
}

// putChunkAnew writes part on the chunk subject of nuid as a new message,
// then purges the subject's earlier ones (the same bytes, or a damaged
// chunk): a removal's fenced purges (RemoveBlob) cannot reach it.
func (u *Updates) putChunkAnew(ctx context.Context, nuid string, part []byte) error {
	subj := "$O." + u.c.n.updates + ".C." + nuid
	ack, err := u.c.js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: part}, jetstream.WithExpectStream("OBJ_"+u.c.n.updates))
	if err != nil {
		return err
	}
	s, err := u.c.js.Stream(ctx, "OBJ_"+u.c.n.updates)
	if err != nil {
		return err
	}
	return s.Purge(ctx, jetstream.WithPurgeSubject(subj), jetstream.WithPurgeSequence(ack.Sequence))
}

// purgeChunks removes the chunks of the object whose NUID is nuid.
func (u *Updates) purgeChunks(ctx context.Context, nuid string) error {
	s, err := u.c.js.Stream(ctx, "OBJ_"+u.c.n.updates)
	if err != nil {
		return err
	}
	return s.Purge(ctx, jetstream.WithPurgeSubject("$O."+u.c.n.updates+".C."+nuid))
}

// partNUID is the NUID of part k of blob sha: its chunk's subject token,
// the same at every relay; a tenant's repository's has its own prefix
// (its object prefix, dots made underscores: one token).
func (u *Updates) partNUID(sha string, k int64) string {
	return strings.ReplaceAll(u.obj, ".", "_") + sha + "-" + strconv.FormatInt(k, 10)
}

// partName is the object name of part k of blob sha.
func (u *Updates) partName(sha string, k int64) string {
	return u.obj + sha + "." + strconv.FormatInt(k, 10)
}

// digest is the object store's digest of b (nats.go's ObjectInfo.Digest).
func digest(b []byte) string {
	h := sha256.New()
	h.Write(b)
	return jetstream.GetObjectDigestValue(h)
}

// BlobRange implements updaterepo.Backend, reading only the parts the
// range covers (each checked against its digest by nats.go).
func (u *Updates) BlobRange(sha string, off, n int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c := u.cache
	c.mu.Lock()
	length, ok := c.lengths[u.obj+sha]
	c.mu.Unlock()
	if !ok {
		h, _, err := u.readHead(ctx)
		if err != nil {
			return nil, err
		}
		if length, ok = h.Blobs[sha]; !ok {
			return nil, fmt.Errorf("blob %s: %w", sha, updaterepo.ErrNotFound)
		}
		c.mu.Lock()
		c.lengths[u.obj+sha] = length
		c.mu.Unlock()
	}
	return u.readRange(ctx, sha, length, off, n)
}

// part returns part k of blob sha, from the cache or the object store
// (where nats.go checks it against its digest).
func (u *Updates) part(ctx context.Context, sha string, k int64) ([]byte, error) {
	name := u.partName(sha, k)
	c := u.cache
	c.mu.Lock()
	b, ok := c.parts[name]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := u.obs.GetBytes(ctx, name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.parts[name]; !ok {
		c.parts[name] = b
		c.order = append(c.order, name)
		if len(c.order) > CachedParts {
			delete(c.parts, c.order[0])
			c.order = c.order[1:]
		}
	}
	return b, nil
}

func (u *Updates) readRange(ctx context.Context, sha string, length, off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off > length {
		return nil, fmt.Errorf("blob %s: range %d+%d outside its %d bytes", sha, off, n, length)
	}
	end := min(off+n, length)
	out := make([]byte, 0, end-off)
	for k := off / BlobPart; k*BlobPart < end; k++ {
		b, err := u.part(ctx, sha, k)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("blob %s: part %d missing, its upload did not finish (upload it again): %w", sha, k, updaterepo.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("jsstore: blob %s part %d: %w", sha, k, err)
		}
		if want := min((k+1)*BlobPart, length) - k*BlobPart; int64(len(b)) != want {
			return nil, fmt.Errorf("jsstore: blob %s part %d: %d bytes, want %d", sha, k, len(b), want)
		}
		lo, hi := max(off, k*BlobPart)-k*BlobPart, min(end, (k+1)*BlobPart)-k*BlobPart
		out = append(out, b[lo:hi]...)
	}
	return out, nil
}
