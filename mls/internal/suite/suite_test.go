package suite

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

func loadCryptoBasics(t testing.TB) []vectorfmt.CryptoBasics {
	t.Helper()
	v, err := vectorfmt.Load[vectorfmt.CryptoBasics]("../../testdata/crypto-basics.cs1.json")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCryptoBasicsVector checks each primitive against the working group's
// crypto-basics vector (the full runner in mls/vectors does the same).
func TestCryptoBasicsVector(t *testing.T) {
	for _, tc := range loadCryptoBasics(t) {
		if tc.CipherSuite != ID {
			t.Logf("skipping cipher suite %d", tc.CipherSuite)
			continue
		}
		if got := RefHash(tc.RefHash.Label, tc.RefHash.Value); !bytes.Equal(got, tc.RefHash.Out) {
			t.Errorf("RefHash = %x, want %x", got, tc.RefHash.Out)
		}
		e := tc.ExpandWithLabel
		if got := ExpandWithLabel(e.Secret, e.Label, e.Context, e.Length); !bytes.Equal(got, e.Out) {
			t.Errorf("ExpandWithLabel = %x, want %x", got, e.Out)
		}
		if got := DeriveSecret(tc.DeriveSecret.Secret, tc.DeriveSecret.Label); !bytes.Equal(got, tc.DeriveSecret.Out) {
			t.Errorf("DeriveSecret = %x, want %x", got, tc.DeriveSecret.Out)
		}
		d := tc.DeriveTreeSecret
		if got := DeriveTreeSecret(d.Secret, d.Label, d.Generation, d.Length); !bytes.Equal(got, d.Out) {
			t.Errorf("DeriveTreeSecret = %x, want %x", got, d.Out)
		}
		s := tc.SignWithLabel
		if !VerifyWithLabel(s.Pub, s.Label, s.Content, s.Signature) {
			t.Error("VerifyWithLabel rejected the vector's signature")
		}
		priv := ed25519.NewKeyFromSeed(s.Priv)
		sig, err := SignWithLabel(priv, s.Label, s.Content)
		if err != nil || !VerifyWithLabel(s.Pub, s.Label, s.Content, sig) {
			t.Errorf("SignWithLabel then VerifyWithLabel failed: %v", err)
		}
		if VerifyWithLabel(s.Pub, s.Label+"x", s.Content, sig) {
			t.Error("VerifyWithLabel accepted a signature under another label")
		}
		x := tc.EncryptWithLabel
		pt, err := DecryptWithLabel(x.Priv, x.Label, x.Context, x.KEMOutput, x.Ciphertext)
		if err != nil || !bytes.Equal(pt, x.Plaintext) {
			t.Errorf("DecryptWithLabel = %x, %v; want %x", pt, err, x.Plaintext)
		}
		kemOut, ct, err := EncryptWithLabel(x.Pub, x.Label, x.Context, x.Plaintext)
		if err != nil {
			t.Fatal(err)
		}
		pt, err = DecryptWithLabel(x.Priv, x.Label, x.Context, kemOut, ct)
		if err != nil || !bytes.Equal(pt, x.Plaintext) {
			t.Errorf("round trip DecryptWithLabel = %x, %v; want %x", pt, err, x.Plaintext)
		}
		if _, err := DecryptWithLabel(x.Priv, x.Label, append(x.Context, 0), kemOut, ct); err != ErrDecrypt {
			t.Errorf("DecryptWithLabel with another context = %v, want ErrDecrypt", err)
		}
		pub, err := PublicKey(x.Priv)
		if err != nil || !bytes.Equal(pub, x.Pub) {
			t.Errorf("PublicKey = %x, %v; want %x", pub, err, x.Pub)
		}
	}
}

func TestDecryptFailuresAreOpaque(t *testing.T) {
	priv, pub, err := GenerateKeyPair(nil)
	if err != nil {
		t.Fatal(err)
	}
	kemOut, ct, err := EncryptWithLabel(pub, "L", nil, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(b []byte, i int) []byte {
		c := append([]byte{}, b...)
		c[i] ^= 1
		return c
	}
	tests := []struct {
		name             string
		priv, kemOut, ct []byte
	}{
		{"tampered ciphertext", priv, kemOut, flip(ct, 0)},
		{"tampered kem output", priv, flip(kemOut, 3), ct},
		{"short kem output", priv, kemOut[:5], ct},
		{"short private key", priv[:5], kemOut, ct},
		{"truncated ciphertext", priv, kemOut, ct[:3]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecryptWithLabel(tt.priv, "L", nil, tt.kemOut, tt.ct); err != ErrDecrypt {
				t.Errorf("DecryptWithLabel = %v, want ErrDecrypt", err)
			}
		})
	}
}

func TestAEADRoundTrip(t *testing.T) {
	key := bytes.Repeat([]byte{7}, KeySize)
	nonce := bytes.Repeat([]byte{9}, NonceSize)
	ct, err := Seal(key, nonce, []byte("aad"), []byte("plaintext"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := Open(key, nonce, []byte("aad"), ct); err != nil || string(pt) != "plaintext" {
		t.Errorf("Open = %q, %v", pt, err)
	}
	if _, err := Open(key, nonce, []byte("aaX"), ct); err != ErrDecrypt {
		t.Errorf("Open with other aad = %v, want ErrDecrypt", err)
	}
	if _, err := Open(key[:3], nonce, nil, ct); err != ErrDecrypt {
		t.Errorf("Open with short key = %v, want ErrDecrypt", err)
	}
}

func TestDeterministicKeyGeneration(t *testing.T) {
	r := bytes.NewReader(bytes.Repeat([]byte{1}, 2*HashSize))
	a, _, err := GenerateKeyPair(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := GenerateKeyPair(r)
	if err != nil || !bytes.Equal(a, b) {
		t.Errorf("same randomness gave different keys: %x %x (%v)", a, b, err)
	}
	if _, _, err := GenerateKeyPair(bytes.NewReader(nil)); err == nil {
		t.Error("GenerateKeyPair with an empty reader succeeded")
	}
}
