package kpcheck

import (
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/session"
)

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// keyPackage returns an MLSMessage-wrapped KeyPackage with credential
// cred, signed by key, valid around now.
func keyPackage(tb testing.TB, key *did.PrivateKey, cred mls.Credential) []byte {
	tb.Helper()
	kp, _, err := mls.NewKeyPackage(&mls.Config{Time: func() time.Time { return now }}, cred, key.Ed25519())
	if err != nil {
		tb.Fatal(err)
	}
	b, err := (&mls.MLSMessage{Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatKeyPackage, KeyPackage: kp}).Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestVerifyKeyPackage(t *testing.T) {
	dev, other := didtest.Key(t, 1), didtest.Key(t, 2)
	good := keyPackage(t, dev, session.NewCredential(dev.DID()))
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
		{"valid KeyPackage of another DID", keyPackage(t, other, session.NewCredential(other.DID())), now, session.ErrIdentityMismatch},
		{"the device's DID, another signature key", keyPackage(t, other, session.NewCredential(dev.DID())), now, errAny},
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
