package tuf_test

import (
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"testing"

	"github.com/torpor-dev/torpor/runtime/update/tuf"
)

func TestTargetVerifyLengthHashes(t *testing.T) {
	data := []byte("a build")
	s256, s512 := sha256.Sum256(data), sha512.Sum512(data)
	tests := []struct {
		name string
		f    tuf.TargetFile
		data []byte
		ok   bool
	}{
		{"sha256", tuf.TargetFile{Length: 7, Hashes: tuf.Hashes{"sha256": s256[:]}}, data, true},
		{"sha256 and sha512", tuf.TargetFile{Length: 7, Hashes: tuf.Hashes{"sha256": s256[:], "sha512": s512[:]}}, data, true},
		{"no hashes", tuf.TargetFile{Length: 7}, data, false},
		{"longer", tuf.TargetFile{Length: 7, Hashes: tuf.Hashes{"sha256": s256[:]}}, append(data, 'x'), false},
		{"wrong length", tuf.TargetFile{Length: 8, Hashes: tuf.Hashes{"sha256": s256[:]}}, data, false},
		{"one hash wrong", tuf.TargetFile{Length: 7, Hashes: tuf.Hashes{"sha256": s256[:], "sha512": s256[:]}}, data, false},
		{"unknown algorithm", tuf.TargetFile{Length: 7, Hashes: tuf.Hashes{"sha256": s256[:], "md5": s256[:16]}}, data, false},
	}
	for _, tt := range tests {
		err := tt.f.VerifyLengthHashes(tt.data)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, tuf.ErrLengthOrHash) {
			t.Errorf("%s: VerifyLengthHashes = %v, want ok %v (or ErrLengthOrHash)", tt.name, err, tt.ok)
		}
	}
}

func TestFileName(t *testing.T) {
	for _, tt := range []struct {
		consistent bool
		want       string
	}{{false, "targets.json"}, {true, "7.targets.json"}} {
		r := tuf.Root{ConsistentSnapshot: tt.consistent}
		if got := r.FileName(7, tuf.TargetsFile); got != tt.want {
			t.Errorf("FileName(7, %q) with consistent %v = %q, want %q", tuf.TargetsFile, tt.consistent, got, tt.want)
		}
	}
}
