package jsstore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/updaterepo"
)

// TestUnfinishedBlobSaysSo: a blob one of whose parts is missing from the
// object store (a relay died while writing it) is not served short: a
// range over the missing part says so, and uploading the blob again
// writes the part back without counting its bytes twice.
func TestUnfinishedBlobSaysSo(t *testing.T) {
	c, u := updates(t, single(t), 1<<20)
	data := bytes.Repeat([]byte("torpor"), jsstore.BlobPart/2) // three parts
	sha := blobSHA(data)
	if err := u.AddBlob(sha, data); err != nil {
		t.Fatal(err)
	}
	used, _ := u.Used()
	js, _ := jetstream.New(c.NATS())
	obs, err := js.ObjectStore(t.Context(), "TORPOR_UPDATES")
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(t.Context(), sha+".1"); err != nil {
		t.Fatal(err)
	}
	if b, err := u.BlobRange(sha, 0, 1000); err != nil || !bytes.Equal(b, data[:1000]) {
		t.Errorf("a range in the first part: %d bytes, %v", len(b), err)
	}
	_, err = u.BlobRange(sha, jsstore.BlobPart-10, 20)
	if !errors.Is(err, updaterepo.ErrNotFound) || !strings.Contains(err.Error(), "part 1 missing") {
		t.Errorf("a range over the missing part: %v", err)
	}
	if err := u.AddBlob(sha, data); err != nil {
		t.Fatal(err)
	}
	if b, err := u.BlobRange(sha, 0, int64(len(data))); err != nil || !bytes.Equal(b, data) {
		t.Errorf("after the upload again: %d bytes, %v", len(b), err)
	}
	if again, _ := u.Used(); again != used {
		t.Errorf("used %d after uploading the blob again; want %d", again, used)
	}
}

// TestUpdatesBucketChecked: the object store is created with the
// replicas and file storage asked and direct gets off, so that every read
// is the stream leader's.
func TestUpdatesBucketChecked(t *testing.T) {
	srv := single(t)
	c := open(t, srv)
	defer c.Close()
	if _, err := c.Updates(t.Context(), 0); err == nil {
		t.Error("a bound of 0 bytes was taken")
	}
	if _, err := c.Updates(t.Context(), 1<<20); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(c.NATS())
	s, err := js.Stream(t.Context(), "OBJ_TORPOR_UPDATES")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := s.CachedInfo().Config; cfg.Storage != jetstream.FileStorage || cfg.AllowDirect || cfg.Replicas != 1 {
		t.Errorf("object store stream: storage %v, allow_direct %v, replicas %d", cfg.Storage, cfg.AllowDirect, cfg.Replicas)
	}
}

// TestRacingUploadsLeaveNoOrphan: two relays uploading the same blob at
// once (two connections, each with its Updates) both succeed, the blob
// reads back whole, and the object store holds no chunk that no part's
// metadata names, nor more chunks than the parts name. Before, each
// upload wrote its parts' chunks under a subject of its own (nats.go's
// Put draws a NUID) and the metadata written last won: the other
// upload's chunks stayed in the stream for ever, unreferenced.
func TestRacingUploadsLeaveNoOrphan(t *testing.T) {
	srv := single(t)
	var us [2]*jsstore.Updates
	var cs [2]*jsstore.Conn
	for i := range us {
		cs[i], us[i] = updates(t, srv, 64<<20)
	}
	var blobs [][]byte
	parts := 0
	for i := range 8 {
		blobs = append(blobs, bytes.Repeat([]byte{byte(i), 't', 'o', 'r'}, jsstore.BlobPart/4+int(i)*1000)) // one part, then two
		parts += (len(blobs[i]) + jsstore.BlobPart - 1) / jsstore.BlobPart
	}
	for _, data := range blobs {
		sha := blobSHA(data)
		var wg sync.WaitGroup
		errs := make([]error, len(us))
		start := make(chan struct{})
		for i, u := range us {
			wg.Go(func() {
				<-start
				errs[i] = u.AddBlob(sha, data)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("upload %d of blob %s: %v", i, sha[:8], err)
			}
		}
		for i, u := range us {
			if b, err := u.BlobRange(sha, 0, int64(len(data))); err != nil || !bytes.Equal(b, data) {
				t.Fatalf("relay %d reads blob %s back: %d bytes, %v", i, sha[:8], len(b), err)
			}
		}
	}
	checkNoOrphans(t, cs[0], parts)
}

// TestAWrongPartIsReplaced: a part written by nats.go's Put (a drawn
// NUID) with other bytes than the blob's is replaced by the upload, and
// its chunks go with it; so is one written by Put with the right bytes,
// since the upload put the blob in the head (parts there may be a
// removal's: TestSlowRemovalKeepsAnUploadAgain), while an upload of the
// blob again keeps the parts it finds with their digest.
func TestAWrongPartIsReplaced(t *testing.T) {
	c, u := updates(t, single(t), 1<<20)
	data := bytes.Repeat([]byte("part"), jsstore.BlobPart/2) // two parts
	sha := blobSHA(data)
	js, _ := jetstream.New(c.NATS())
	obs, err := js.ObjectStore(t.Context(), "TORPOR_UPDATES")
	if err != nil {
		t.Fatal(err)
	}
	opts := &jetstream.ObjectMetaOptions{ChunkSize: jsstore.BlobPart}
	if _, err := obs.Put(t.Context(), jetstream.ObjectMeta{Name: sha + ".0", Opts: opts}, bytes.NewReader(bytes.Repeat([]byte("x"), jsstore.BlobPart))); err != nil {
		t.Fatal(err)
	}
	kept, err := obs.Put(t.Context(), jetstream.ObjectMeta{Name: sha + ".1", Opts: opts}, bytes.NewReader(data[jsstore.BlobPart:]))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.AddBlob(sha, data); err != nil {
		t.Fatal(err)
	}
	if b, err := u.BlobRange(sha, 0, int64(len(data))); err != nil || !bytes.Equal(b, data) {
		t.Errorf("the blob after its upload: %d bytes, %v", len(b), err)
	}
	in, err := obs.GetInfo(t.Context(), sha+".1")
	if err != nil || in.NUID == kept.NUID {
		t.Errorf("the right part written by Put: %+v, %v; want it written anew (not NUID %s)", in, err, kept.NUID)
	}
	checkNoOrphans(t, c, 2)
	if err := u.AddBlob(sha, data); err != nil {
		t.Fatal(err)
	}
	if again, err := obs.GetInfo(t.Context(), sha+".1"); err != nil || again.ModTime != in.ModTime {
		t.Errorf("the part after an upload again: %+v, %v; want it kept", again, err)
	}
	checkNoOrphans(t, c, 2)
}

// checkNoOrphans checks that the blobs' object store (on c) holds parts
// parts, and exactly the chunks their metadata names: none unreferenced,
// none twice.
func checkNoOrphans(t *testing.T, c *jsstore.Conn, parts int) {
	t.Helper()
	js, _ := jetstream.New(c.NATS())
	obs, err := js.ObjectStore(t.Context(), "TORPOR_UPDATES")
	if err != nil {
		t.Fatal(err)
	}
	infos, err := obs.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]uint64{}
	for _, in := range infos {
		named["$O.TORPOR_UPDATES.C."+in.NUID] += uint64(in.Chunks)
	}
	s, err := js.Stream(t.Context(), "OBJ_TORPOR_UPDATES")
	if err != nil {
		t.Fatal(err)
	}
	si, err := s.Info(t.Context(), jetstream.WithSubjectFilter("$O.TORPOR_UPDATES.C.>"))
	if err != nil {
		t.Fatal(err)
	}
	orphans := 0
	for subj, n := range si.State.Subjects {
		if n != named[subj] {
			orphans += int(n - min(n, named[subj]))
			t.Errorf("chunk subject %s holds %d chunks; the parts' metadata names %d", subj, n, named[subj])
		}
	}
	if len(infos) != parts || orphans > 0 {
		t.Errorf("the object store holds %d parts and %d orphaned chunks; want %d parts and none", len(infos), orphans, parts)
	}
}

// TestRemoveBlobLeavesNothing: blobs removed from a tenant's repository
// (a partition) leave no part's info, no chunk and no tombstone in the
// object store, the head counts only what is left, and the relay's own
// repository's blob is untouched; a check that refuses keeps the blob.
func TestRemoveBlobLeavesNothing(t *testing.T) {
	c, u := updates(t, single(t), 64<<20)
	p, err := u.Partition(updaterepo.TenantKey("did:key:z6MkTenantA"))
	if err != nil {
		t.Fatal(err)
	}
	add := func(b updaterepo.Backend, data []byte) string {
		sha := blobSHA(data)
		if err := b.AddBlob(sha, data); err != nil {
			t.Fatal(err)
		}
		return sha
	}
	hostSHA := add(u, bytes.Repeat([]byte("host"), jsstore.BlobPart/2)) // 2 parts
	kept := add(p, []byte("kept"))                                      // 1 part
	var gone []string
	for i := range 3 {
		gone = append(gone, add(p, bytes.Repeat([]byte{'g', byte(i)}, jsstore.BlobPart/2+i+1))) // 2 parts each
	}
	checkNoOrphans(t, c, 2+1+6)
	if _, err := p.RemoveBlob(kept, func(updaterepo.Txn) error { return updaterepo.ErrNamed }); !errors.Is(err, updaterepo.ErrNamed) {
		t.Errorf("a refused removal: %v", err)
	}
	for _, sha := range gone {
		if n, err := p.RemoveBlob(sha, func(updaterepo.Txn) error { return nil }); err != nil || n <= jsstore.BlobPart {
			t.Fatalf("RemoveBlob(%s) = %d, %v", sha[:8], n, err)
		}
	}
	checkNoOrphans(t, c, 2+1)
	js, _ := jetstream.New(c.NATS())
	s, _ := js.Stream(t.Context(), "OBJ_TORPOR_UPDATES")
	si, err := s.Info(t.Context(), jetstream.WithSubjectFilter("$O.TORPOR_UPDATES.M.>"))
	if err != nil {
		t.Fatal(err)
	}
	if len(si.State.Subjects) != 3 {
		t.Errorf("%d subjects of parts' info in the stream; want 3 (no tombstones)", len(si.State.Subjects))
	}
	if n, _ := p.BlobBytes(); n != 4 {
		t.Errorf("the tenant's blob bytes %d; want 4", n)
	}
	if b, err := u.BlobRange(hostSHA, 0, 8); err != nil || string(b) != "hosthost" {
		t.Errorf("the relay's own blob: %q, %v", b, err)
	}
}

// TestSlowRemovalKeepsAnUploadAgain: a removal that outlasts the tenant's
// lock (held here between taking the blob out of the head and purging its
// parts) while the same blob is uploaded again purges none of the parts
// the upload wrote: through another relay every byte is served, and the
// object store holds the blob's parts once.
func TestSlowRemovalKeepsAnUploadAgain(t *testing.T) {
	srv := single(t)
	c, u := updates(t, srv, 1<<20)
	data := bytes.Repeat([]byte("torpor"), jsstore.BlobPart/2) // three parts
	sha := blobSHA(data)
	if err := u.AddBlob(sha, data); err != nil {
		t.Fatal(err)
	}
	purging, resume := make(chan struct{}), make(chan struct{})
	jsstore.SetRemoved(u, func(string) { close(purging); <-resume })
	removed := make(chan error, 1)
	go func() {
		_, err := u.RemoveBlob(sha, func(updaterepo.Txn) error { return nil })
		removed <- err
	}()
	<-purging
	if err := u.AddBlob(sha, data); err != nil {
		t.Fatalf("the upload again during the removal: %v", err)
	}
	close(resume)
	if err := <-removed; err != nil {
		t.Fatalf("the removal: %v", err)
	}
	_, ou := updates(t, srv, 1<<20)
	if b, err := ou.BlobRange(sha, 0, int64(len(data))); err != nil || !bytes.Equal(b, data) {
		t.Errorf("the blob uploaded again, through another relay: %d bytes, %v; want all %d", len(b), err, len(data))
	}
	checkNoOrphans(t, c, 3)
}

// TestRemovalStopsForAPreviousReleaseUpload: in a mixed cluster
// (docs/upgrades.md), a relay of the previous release uploads a blob
// again while this release's removal of it is about to purge its parts:
// that upload puts the blob back in the head and keeps the parts it finds
// there (AddBlobAsPrevious); the removal, which reads the head before
// each part's purge, stops and leaves them, so the blob downloads whole
// through a third relay and nothing is left unreferenced. Without the
// check the removal purged every part: "part 0 missing".
func TestRemovalStopsForAPreviousReleaseUpload(t *testing.T) {
	srv := single(t)
	c, u := updates(t, srv, 1<<20)
	_, previous := updates(t, srv, 1<<20)
	data := bytes.Repeat([]byte("torpor"), jsstore.BlobPart/2) // three parts
	sha := blobSHA(data)
	if err := u.AddBlob(sha, data); err != nil {
		t.Fatal(err)
	}
	jsstore.SetRemoved(u, func(string) {
		if err := jsstore.AddBlobAsPrevious(previous, sha, data); err != nil {
			t.Errorf("the previous release's upload during the removal: %v", err)
		}
	})
	if n, err := u.RemoveBlob(sha, func(updaterepo.Txn) error { return nil }); n != int64(len(data)) || err != nil {
		t.Fatalf("RemoveBlob = %d, %v; want %d", n, err, len(data))
	}
	_, ou := updates(t, srv, 1<<20)
	if b, err := ou.BlobRange(sha, 0, int64(len(data))); err != nil || !bytes.Equal(b, data) {
		t.Errorf("the blob uploaded again, through a third relay: %d bytes, %v; want all %d", len(b), err, len(data))
	}
	if used, err := ou.Used(); used != int64(len(data)) || err != nil {
		t.Errorf("the repository holds %d bytes, %v; want the blob's %d", used, err, len(data))
	}
	checkNoOrphans(t, c, 3)
}

// updates opens a connection to srv, closed when the test ends, and its
// Updates bounded to limit bytes.
func updates(t *testing.T, srv *jsserver.Server, limit int64) (*jsstore.Conn, *jsstore.Updates) {
	t.Helper()
	c := open(t, srv)
	t.Cleanup(func() { c.Close() })
	u, err := c.Updates(t.Context(), limit)
	if err != nil {
		t.Fatal(err)
	}
	return c, u
}

// blobSHA is data's SHA-256 in hex, the name a blob is stored under.
func blobSHA(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
