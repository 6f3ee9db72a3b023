package tufsign

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
)

func pub(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	p, k, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, k
}

// TestRootThresholds: a root asking two of three root keys verifies
// itself (go-tuf's VerifyDelegate) with two signatures and not with one;
// thresholds out of range are refused.
func TestRootThresholds(t *testing.T) {
	var pubs []ed25519.PublicKey
	var keys []ed25519.PrivateKey
	for range 3 {
		p, k := pub(t)
		pubs, keys = append(pubs, p), append(keys, k)
	}
	tp, _ := pub(t)
	sp, _ := pub(t)
	ts, _ := pub(t)
	roles := Roles{Root: pubs, RootThreshold: 2, Targets: []ed25519.PublicKey{tp}, TargetsThreshold: 1, Snapshot: sp, Timestamp: ts}
	root, err := NewRoot(roles, time.Now().AddDate(1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]string{1: "not enough signatures, got 1, want 2", 2: ""} {
		b, err := Sign(root, keys[:n]...)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := metadata.Root().FromBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		err = parsed.VerifyDelegate(metadata.ROOT, parsed)
		if (want == "" && err != nil) || (want != "" && (err == nil || !strings.Contains(err.Error(), want))) {
			t.Errorf("%d signatures: %v; want %q", n, err, want)
		}
	}
	roles.RootThreshold = 4
	if _, err := NewRoot(roles, time.Now()); err == nil || !strings.Contains(err.Error(), "root threshold 4 of 3 keys") {
		t.Errorf("threshold 4 of 3: %v", err)
	}
}
