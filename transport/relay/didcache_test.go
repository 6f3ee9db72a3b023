package relay

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
)

// TestDIDCache: a cached DID is the one did.Parse gives, a spelling
// did.Parse refuses is refused every time, and the cache stays bounded.
func TestDIDCache(t *testing.T) {
	c := &didCache{m: map[string]did.DID{}}
	k := didtest.Key(t, 1).DID()
	for range 2 {
		if d, err := c.parse(k.String()); err != nil || d != k {
			t.Fatalf("parse(%s) = %v, %v", k, d, err)
		}
		if _, err := c.parse(k.String() + "x"); err == nil {
			t.Fatal("parse accepted a DID with a character added")
		}
	}
	for i := range maxCachedDIDs + 10 {
		pub := make([]byte, 32)
		binary.BigEndian.PutUint32(pub, uint32(i))
		d, err := did.FromPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.parse(d.String()); err != nil {
			t.Fatal(fmt.Errorf("key %d: %w", i, err))
		}
	}
	if len(c.m) > maxCachedDIDs {
		t.Errorf("cache holds %d DIDs, bound %d", len(c.m), maxCachedDIDs)
	}
}
