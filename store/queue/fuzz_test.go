package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzRecord feeds arbitrary bytes to the record decoder: it never panics,
// and whatever it accepts survives encode → decode unchanged.
func FuzzRecord(f *testing.F) {
	for _, r := range []Record{
		{From: alice, Body: []byte("opaque-ok"), EnqueuedAt: t0, ExpiresAt: t0},
		{Kind: KindHandshake, Body: nil},
	} {
		v, err := encodeRecord(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := decodeRecord(agent, 1, v)
		if err != nil {
			return
		}
		w, err := encodeRecord(r)
		if err != nil {
			t.Fatalf("encoding a decoded record: %v", err)
		}
		again, err := decodeRecord(agent, 1, w)
		if err != nil {
			t.Fatalf("decoding a re-encoded record: %v", err)
		}
		if diff := cmp.Diff(r, again, cmp.Comparer(func(a, b []byte) bool { return string(a) == string(b) })); diff != "" {
			t.Errorf("round trip changed the record (-first +second):\n%s", diff)
		}
	})
}
