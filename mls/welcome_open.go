package mls

import (
	"bytes"
	"fmt"

	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// OpenedWelcome is a Welcome decrypted for one of our KeyPackages (RFC
// 9420, Section 12.4.3.1): the
// GroupSecrets, the GroupInfo and the key schedule of the epoch it starts.
// The GroupInfo's confirmation tag has been checked; its signature and the
// ratchet tree have not (they need the tree; see Join).
type OpenedWelcome struct {
	Secrets   *GroupSecrets
	GroupInfo *GroupInfo
	epoch     *schedule.Epoch
}

// EpochAuthenticator returns the epoch_authenticator of the epoch the
// Welcome starts (RFC 9420, Section 8.7).
func (o *OpenedWelcome) EpochAuthenticator() []byte {
	return bytes.Clone(o.epoch.EpochAuthenticator)
}

// KeyPackageRef returns MakeKeyPackageRef(kp) (RFC 9420, Section 5.2).
func KeyPackageRef(kp *KeyPackage) []byte {
	return suite.KeyPackageRef(kp.Marshal())
}

// OpenWelcome performs the first steps of joining by Welcome (RFC 9420,
// Section 12.4.3.1): it finds the entry for kp, decrypts the GroupSecrets
// with initPriv (the private key of kp.InitKey), resolves the PSKs with
// psks, decrypts the GroupInfo with the welcome key and nonce, and verifies
// the GroupInfo's confirmation tag against the derived confirmation_key.
//
// It returns ErrUnsupportedCipherSuite for a suite other than 0x0001 or a
// mismatch with kp, ErrNotForUs if no entry is for kp, ErrDecryption when a
// decryption fails, ErrMissingPSK when a PSK is unknown, ErrInvalidWelcome
// when the confirmation tag does not match, and a *ParseError for malformed
// decrypted content.
func OpenWelcome(w *Welcome, kp *KeyPackage, initPriv []byte, psks PSKLookup) (*OpenedWelcome, error) {
	if w.CipherSuite != CipherSuiteX25519AES128SHA256Ed25519 || kp.CipherSuite != w.CipherSuite {
		return nil, ErrUnsupportedCipherSuite
	}
	secrets, err := openGroupSecrets(w, kp, initPriv)
	if err != nil {
		return nil, err
	}
	if err := checkPSKIDs(secrets.PSKs); err != nil {
		return nil, err
	}
	pskSecret, err := pskSecret(secrets.PSKs, psks)
	if err != nil {
		return nil, err
	}
	gi, err := openGroupInfo(w, secrets.JoinerSecret, pskSecret)
	if err != nil {
		return nil, err
	}
	if gi.GroupContext.CipherSuite != kp.CipherSuite {
		return nil, ErrUnsupportedCipherSuite
	}
	if gi.GroupContext.Version != ProtocolMLS10 {
		return nil, fmt.Errorf("%w: GroupContext version %d", ErrInvalidWelcome, gi.GroupContext.Version)
	}
	epoch := schedule.FromJoiner(secrets.JoinerSecret, pskSecret, gi.GroupContext.Marshal())
	if !schedule.VerifyConfirmationTag(epoch.ConfirmationKey, gi.GroupContext.ConfirmedTranscriptHash, gi.ConfirmationTag) {
		return nil, fmt.Errorf("%w: confirmation tag does not match", ErrInvalidWelcome)
	}
	return &OpenedWelcome{Secrets: secrets, GroupInfo: gi, epoch: epoch}, nil
}

// openGroupSecrets finds the Welcome's entry for kp and decrypts it:
// group_secrets = DecryptWithLabel(init_key_priv, "Welcome",
// encrypted_group_info, kem_output, ciphertext).
func openGroupSecrets(w *Welcome, kp *KeyPackage, initPriv []byte) (*GroupSecrets, error) {
	ref := KeyPackageRef(kp)
	for i := range w.Secrets {
		e := &w.Secrets[i]
		if !bytes.Equal(e.NewMember, ref) {
			continue
		}
		plain, err := suite.DecryptWithLabel(initPriv, "Welcome", w.EncryptedGroupInfo,
			e.EncryptedGroupSecrets.KEMOutput, e.EncryptedGroupSecrets.Ciphertext)
		if err != nil {
			return nil, ErrDecryption
		}
		return ParseGroupSecrets(plain)
	}
	return nil, ErrNotForUs
}

// openGroupInfo decrypts the Welcome's GroupInfo with the welcome key and
// nonce derived from joiner_secret and psk_secret.
func openGroupInfo(w *Welcome, joinerSecret, pskSecret []byte) (*GroupInfo, error) {
	key, nonce := schedule.WelcomeKeyNonce(schedule.WelcomeSecret(joinerSecret, pskSecret))
	plain, err := suite.Open(key, nonce, nil, w.EncryptedGroupInfo)
	if err != nil {
		return nil, ErrDecryption
	}
	return ParseGroupInfo(plain)
}
