package mls

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// TestPassiveClientHandlingCommit runs passive-client-handling-commit
// .cs1.json: join by Welcome, then follow each epoch's proposals and Commit
// as a non-committing member (RFC 9420, Section 12.4.2), comparing the
// epoch authenticator.
func TestPassiveClientHandlingCommit(t *testing.T) {
	var cases []struct {
		CipherSuite  uint16 `json:"cipher_suite"`
		ExternalPSKs []struct {
			PSKID string `json:"psk_id"`
			PSK   string `json:"psk"`
		} `json:"external_psks"`
		KeyPackage                string  `json:"key_package"`
		SignaturePriv             string  `json:"signature_priv"`
		EncryptionPriv            string  `json:"encryption_priv"`
		InitPriv                  string  `json:"init_priv"`
		Welcome                   string  `json:"welcome"`
		RatchetTree               *string `json:"ratchet_tree"`
		InitialEpochAuthenticator string  `json:"initial_epoch_authenticator"`
		Epochs                    []struct {
			Proposals          []string `json:"proposals"`
			Commit             string   `json:"commit"`
			EpochAuthenticator string   `json:"epoch_authenticator"`
		} `json:"epochs"`
	}
	loadVectors(t, "passive-client-handling-commit.cs1.json", &cases)
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	commits := 0
	for i, c := range cases {
		psks := map[string][]byte{}
		for _, p := range c.ExternalPSKs {
			psks[string(unhex(t, p.PSKID))] = unhex(t, p.PSK)
		}
		cfg := &Config{PSKs: ExternalPSKs(psks)}
		kpMsg, err := ParseMLSMessage(unhex(t, c.KeyPackage))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		wMsg, err := ParseMLSMessage(unhex(t, c.Welcome))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		var tree *RatchetTree
		if c.RatchetTree != nil {
			if tree, err = ParseRatchetTree(unhex(t, *c.RatchetTree)); err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
		}
		priv := &KeyPackagePrivate{
			InitPriv: unhex(t, c.InitPriv), EncryptionPriv: unhex(t, c.EncryptionPriv),
			SignaturePriv: ed25519.NewKeyFromSeed(unhex(t, c.SignaturePriv)),
		}
		g, err := Join(cfg, wMsg.Welcome, kpMsg.KeyPackage, priv, tree)
		if err != nil {
			t.Fatalf("case %d: Join: %v", i, err)
		}
		if !bytes.Equal(g.EpochAuthenticator(), unhex(t, c.InitialEpochAuthenticator)) {
			t.Fatalf("case %d: initial epoch authenticator differs", i)
		}
		for e, ep := range c.Epochs {
			for _, p := range ep.Proposals {
				m, err := ParseMLSMessage(unhex(t, p))
				if err != nil {
					t.Fatalf("case %d epoch %d: %v", i, e, err)
				}
				if _, err := g.ProcessMessage(m); err != nil {
					t.Fatalf("case %d epoch %d: proposal: %v", i, e, err)
				}
			}
			m, err := ParseMLSMessage(unhex(t, ep.Commit))
			if err != nil {
				t.Fatalf("case %d epoch %d: %v", i, e, err)
			}
			if _, err := g.ProcessMessage(m); err != nil {
				t.Fatalf("case %d epoch %d: commit: %v", i, e, err)
			}
			if !bytes.Equal(g.EpochAuthenticator(), unhex(t, ep.EpochAuthenticator)) {
				t.Fatalf("case %d epoch %d: epoch authenticator = %x, want %s", i, e, g.EpochAuthenticator(), ep.EpochAuthenticator)
			}
			commits++
		}
	}
	if commits < len(cases) {
		t.Fatalf("followed %d commits in %d cases", commits, len(cases))
	}
	t.Logf("followed %d commits in %d cases", commits, len(cases))
}
