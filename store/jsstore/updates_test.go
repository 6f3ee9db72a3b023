package jsstore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/updaterepo"
)

// TestUnfinishedBlobSaysSo: a blob one of whose parts is missing from the
// object store (a relay died while writing it) is not served short: a
// range over the missing part says so, and uploading the blob again
// writes the part back without counting its bytes twice.
func TestUnfinishedBlobSaysSo(t *testing.T) {
	srv := single(t)
	c := open(t, srv)
	defer c.Close()
	u, err := c.Updates(t.Context(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("torpor"), jsstore.BlobPart/2) // three parts
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
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
