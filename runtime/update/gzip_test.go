package update_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"testing"

	"github.com/torpor-dev/torpor/runtime/update"
)

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGzipTarget: a gzip target travels compressed and is handed on
// decompressed, once its compressed bytes verified; one that decompresses
// to more than its stated size is cut off at size+1 bytes and refused, as
// is one that decompresses to less.
func TestGzipTarget(t *testing.T) {
	build := bytes.Repeat([]byte("torpor-agent "), 20_000) // 260,000 bytes
	for _, tc := range []struct {
		size   int64
		reason string
	}{
		{int64(len(build)), ""},
		{1000, "decompresses to more than 1000 bytes, not its stated 1000"},
		{int64(len(build)) + 1, "decompresses to 260000 bytes, not its stated 260001"},
	} {
		r := newRepo(t)
		cu := agentFor(2)
		cu.Encoding, cu.Size = update.EncodingGzip, tc.size
		z := gz(t, build)
		r.publish("agent.gz", z, cu)
		res, err := r.device(1).Check(context.Background())
		if tc.reason != "" {
			refusal(t, err, update.BadTarget, tc.reason)
			continue
		}
		verified(t, res, err, build)
		if res.Bytes != int64(len(z)) || len(z) > len(build)/20 {
			t.Errorf("fetched %d bytes of a %d-byte gzip target for %d bytes", res.Bytes, len(z), len(build))
		}
	}
	r := newRepo(t)
	cu := agentFor(2)
	cu.Encoding = update.EncodingGzip
	r.publish("agent.gz", gz(t, build), cu)
	_, err := r.device(1).Check(context.Background())
	refusal(t, err, update.Invalid, "want none, or gzip with the decompressed size")
}
