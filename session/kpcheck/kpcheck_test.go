package kpcheck

import (
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/session/sessiontest"
)

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func TestVerifyKeyPackage(t *testing.T) {
	dev, other := didtest.Key(t, 1), didtest.Key(t, 2)
	good := sessiontest.KeyPackage(t, dev.DID(), dev, now)
	tampered := append([]byte(nil), good...)
	tampered[len(tampered)-1] ^= 1
	bare, err := mls.ParseMLSMessage(good)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		kp   []byte
		at   time.Time
		want error // nil: accepted; errAny: any error
	}{
		{"genuine", good, now, nil},
		{"valid header, garbage after", append([]byte{0, 1, 0, 5}, make([]byte, 200)...), now, errAny},
		{"valid KeyPackage of another DID", sessiontest.KeyPackage(t, other.DID(), other, now), now, session.ErrIdentityMismatch},
		{"the device's DID, another signature key", sessiontest.KeyPackage(t, dev.DID(), other, now), now, errAny},
		{"signature flipped", tampered, now, mls.ErrInvalidSignature},
		{"trailing bytes", append(append([]byte(nil), good...), 0), now, errAny},
		{"no MLSMessage wrapper", bare.KeyPackage.Marshal(), now, errAny},
		{"lifetime over", good, now.AddDate(1, 0, 0), errAny},
	}
	for _, tt := range tests {
		err := Verifier{}.VerifyKeyPackage(dev.DID(), tt.kp, tt.at)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: VerifyKeyPackage = %v, want nil", tt.name, err)
		case tt.want != nil && err == nil:
			t.Errorf("%s: VerifyKeyPackage = nil, want an error", tt.name)
		case tt.want != nil && tt.want != errAny && !errors.Is(err, tt.want):
			t.Errorf("%s: VerifyKeyPackage = %v, want %v", tt.name, err, tt.want)
		}
	}
}

var errAny = errors.New("any error")
