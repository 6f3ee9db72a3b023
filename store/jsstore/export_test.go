package jsstore

import (
	"context"
	"fmt"
)

// SetRemoved sets u's seam called by RemoveBlob once the blob left the
// head, before its parts are purged.
func SetRemoved(u *Updates, f func(sha string)) { u.removed = f }

// AddBlobAsPrevious uploads data as a relay of the previous release
// (testenv.PreviousRelease) does: the blob counted in the head, then each
// part written unless it is there with its digest, never anew, whoever
// put the blob in the head.
func AddBlobAsPrevious(u *Updates, sha string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n := int64(len(data))
	err := u.update(ctx, func(t *jsTxn) error {
		if _, ok := t.h.Blobs[sha]; !ok {
			t.h.Used, t.changed = t.h.Used+n, true
			t.h.Blobs = setIn(t.h.Blobs, sha, n)
		}
		return nil
	})
	for k := int64(0); err == nil && k*BlobPart < n; k++ {
		if err = u.putPart(ctx, sha, k, data[k*BlobPart:min((k+1)*BlobPart, n)], false); err != nil {
			err = fmt.Errorf("part %d: %w", k, err)
		}
	}
	return err
}
