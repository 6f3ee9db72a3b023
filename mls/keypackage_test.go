package mls

import (
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/mls/internal/suite"
)

func newSigner(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	priv, _, err := suite.GenerateSignatureKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func TestNewKeyPackageVerifies(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cfg := &Config{Time: func() time.Time { return now }}
	kp, priv, err := NewKeyPackage(cfg, NewBasicCredential([]byte("alice")), newSigner(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := kp.Verify(cfg); err != nil {
		t.Fatalf("Verify = %v", err)
	}
	round, err := ParseKeyPackage(kp.Marshal())
	if err != nil || round.Verify(cfg) != nil {
		t.Fatalf("re-parsed KeyPackage: %v", err)
	}
	if pub, _ := suite.PublicKey(priv.InitPriv); string(pub) != string(kp.InitKey) {
		t.Error("InitPriv does not match InitKey")
	}
	if pub, _ := suite.PublicKey(priv.EncryptionPriv); string(pub) != string(kp.LeafNode.EncryptionKey) {
		t.Error("EncryptionPriv does not match the leaf's encryption key")
	}

	later := &Config{Time: func() time.Time { return now.Add(DefaultKeyPackageLifetime + time.Second) }}
	tests := []struct {
		name   string
		cfg    *Config
		tamper func(k *KeyPackage)
		want   error
	}{
		{"expired", later, func(*KeyPackage) {}, ErrLifetime},
		{"too long", &Config{Time: cfg.Time, MaxLifetime: 24 * time.Hour}, func(*KeyPackage) {}, ErrLifetime},
		{"signature", cfg, func(k *KeyPackage) { k.Signature[0] ^= 1 }, ErrInvalidSignature},
		{"leaf signature", cfg, func(k *KeyPackage) { k.LeafNode.Signature[0] ^= 1 }, ErrInvalidSignature},
		{"suite", cfg, func(k *KeyPackage) { k.CipherSuite = 2 }, ErrUnsupportedCipherSuite},
		{"init key reused", cfg, func(k *KeyPackage) { k.InitKey = k.LeafNode.EncryptionKey }, ErrInvalidKeyPackage},
		{"source", cfg, func(k *KeyPackage) { k.LeafNode.Source = LeafNodeSourceUpdate }, ErrInvalidLeafNode},
	}
	for _, tt := range tests {
		k, _ := ParseKeyPackage(kp.Marshal())
		tt.tamper(k)
		if err := k.Verify(tt.cfg); !errors.Is(err, tt.want) {
			t.Errorf("%s: Verify = %v, want %v", tt.name, err, tt.want)
		}
	}
	rejectAll := &Config{Time: cfg.Time, ValidateCredential: func(Credential, []byte) error { return errors.New("unknown identity") }}
	if err := kp.Verify(rejectAll); !errors.Is(err, ErrInvalidLeafNode) {
		t.Errorf("Verify with a rejecting credential validator = %v", err)
	}
}

// TestDefaultKeyPackageLifetime: a KeyPackage made with the defaults is
// valid from KeyPackageClockSkew before now to DefaultKeyPackageLifetime
// after, 28 days at most in all, under the month (2,628,000 s) ts-mls
// declares as its maximum lifetime.
func TestDefaultKeyPackageLifetime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	kp, _, err := NewKeyPackage(&Config{Time: func() time.Time { return now }}, NewBasicCredential([]byte("a")), newSigner(t))
	if err != nil {
		t.Fatal(err)
	}
	l := kp.LeafNode.Lifetime
	if int64(l.NotBefore) != now.Add(-KeyPackageClockSkew).Unix() || int64(l.NotAfter) != now.Add(DefaultKeyPackageLifetime).Unix() {
		t.Errorf("lifetime %d … %d, want now-%v … now+%v", l.NotBefore, l.NotAfter, KeyPackageClockSkew, DefaultKeyPackageLifetime)
	}
	if span := time.Duration(l.NotAfter-l.NotBefore) * time.Second; span > 28*24*time.Hour || span.Seconds() > 2_628_000 {
		t.Errorf("lifetime spans %v, want at most 28 days", span)
	}
}
