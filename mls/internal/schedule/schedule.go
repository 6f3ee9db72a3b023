// Package schedule implements the key schedule of RFC 9420 Section 8 over
// encoded inputs: the joiner, welcome and epoch secrets, the secrets derived
// from each epoch (Table 4), the PSK secret (Section 8.4), the exporter
// (Section 8.5), the external init key pair and secret (Section 8.3), the
// transcript hashes and confirmation tag (Section 8.2) and the Welcome key
// and nonce (Section 12.4.3.1).
//
// The package takes the GroupContext, PreSharedKeyID and transcript inputs as
// their encodings, so it does not depend on the structs of package mls (which
// depends on it).
//
// Deletion schedule (RFC 9420 Section 9.2): the joiner, welcome and epoch
// secrets are returned to the caller or dropped as soon as the values derived
// from them exist; an Epoch holds only what later operations need. Its
// EncryptionSecret is meant to seed the secret tree and then be cleared with
// ForgetEncryptionSecret.
package schedule

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	"github.com/torpor-dev/torpor/mls/internal/wire"
)

// Epoch holds the secrets of one epoch derived from its epoch_secret (RFC
// 9420 Section 8, Table 4) and the init_secret of the next epoch.
type Epoch struct {
	SenderDataSecret   []byte
	EncryptionSecret   []byte // nil once ForgetEncryptionSecret was called
	ExporterSecret     []byte
	ExternalSecret     []byte
	ConfirmationKey    []byte
	MembershipKey      []byte
	ResumptionPSK      []byte
	EpochAuthenticator []byte
	InitSecret         []byte // init_secret_[n], the input of the next epoch
}

// zero is the all-zero string of KDF.Nh bytes written 0 in Section 8.
var zero = make([]byte, suite.HashSize)

// JoinerSecret returns joiner_secret = ExpandWithLabel(Extract(init_secret,
// commit_secret), "joiner", GroupContext, Nh) (RFC 9420 Section 8). A nil
// commitSecret means the all-zero string, as for a commit without a path.
func JoinerSecret(initSecret, commitSecret, groupContext []byte) []byte {
	if commitSecret == nil {
		commitSecret = zero
	}
	prk := suite.Extract(initSecret, commitSecret)
	return suite.ExpandWithLabel(prk, "joiner", groupContext, suite.HashSize)
}

// memberSecret returns Extract(joiner_secret, psk_secret), the secret from
// which both the welcome and the epoch secret are derived. A nil pskSecret
// means the all-zero string (no PSKs).
func memberSecret(joinerSecret, pskSecret []byte) []byte {
	if pskSecret == nil {
		pskSecret = zero
	}
	return suite.Extract(joinerSecret, pskSecret)
}

// WelcomeSecret returns welcome_secret = DeriveSecret(Extract(joiner_secret,
// psk_secret), "welcome").
func WelcomeSecret(joinerSecret, pskSecret []byte) []byte {
	return suite.DeriveSecret(memberSecret(joinerSecret, pskSecret), "welcome")
}

// WelcomeKeyNonce returns the key and nonce that encrypt a Welcome's
// GroupInfo (RFC 9420 Section 12.4.3.1).
func WelcomeKeyNonce(welcomeSecret []byte) (key, nonce []byte) {
	return suite.ExpandWithLabel(welcomeSecret, "key", nil, suite.KeySize),
		suite.ExpandWithLabel(welcomeSecret, "nonce", nil, suite.NonceSize)
}

// FromJoiner derives the epoch from joiner_secret, psk_secret (nil for none)
// and the encoded GroupContext of the new epoch. This is how a new member
// starts (RFC 9420 Section 12.4.3.1) and the second half of every epoch
// change.
func FromJoiner(joinerSecret, pskSecret, groupContext []byte) *Epoch {
	epochSecret := suite.ExpandWithLabel(memberSecret(joinerSecret, pskSecret), "epoch", groupContext, suite.HashSize)
	return &Epoch{
		SenderDataSecret:   suite.DeriveSecret(epochSecret, "sender data"),
		EncryptionSecret:   suite.DeriveSecret(epochSecret, "encryption"),
		ExporterSecret:     suite.DeriveSecret(epochSecret, "exporter"),
		ExternalSecret:     suite.DeriveSecret(epochSecret, "external"),
		ConfirmationKey:    suite.DeriveSecret(epochSecret, "confirm"),
		MembershipKey:      suite.DeriveSecret(epochSecret, "membership"),
		ResumptionPSK:      suite.DeriveSecret(epochSecret, "resumption"),
		EpochAuthenticator: suite.DeriveSecret(epochSecret, "authentication"),
		InitSecret:         suite.DeriveSecret(epochSecret, "init"),
	}
}

// Next runs the full schedule from the previous epoch's init_secret: it
// returns joiner_secret (for Welcome messages) and the new epoch.
func Next(initSecret, commitSecret, pskSecret, groupContext []byte) (joinerSecret []byte, e *Epoch) {
	joinerSecret = JoinerSecret(initSecret, commitSecret, groupContext)
	return joinerSecret, FromJoiner(joinerSecret, pskSecret, groupContext)
}

// ForgetEncryptionSecret drops the encryption_secret once the secret tree
// holds it (RFC 9420 Section 9.2).
func (e *Epoch) ForgetEncryptionSecret() { e.EncryptionSecret = nil }

// MaxExportLength is the longest secret Export derives.
const MaxExportLength = suite.MaxExpand

// ErrExportLength is returned by Export for a length over MaxExportLength.
var ErrExportLength = errors.New("mls: exporter length too large")

// Export is MLS-Exporter(label, context, length) = ExpandWithLabel(
// DeriveSecret(exporter_secret, label), "exported", Hash(context), length)
// (RFC 9420 Section 8.5).
func (e *Epoch) Export(label string, context []byte, length int) ([]byte, error) {
	if length < 0 || length > MaxExportLength {
		return nil, ErrExportLength
	}
	return suite.ExpandWithLabel(suite.DeriveSecret(e.ExporterSecret, label), "exported", suite.Hash(context), length), nil
}

// ExternalKeyPair returns external_priv, external_pub =
// KEM.DeriveKeyPair(external_secret) (RFC 9420 Section 8).
func (e *Epoch) ExternalKeyPair() (priv, pub []byte, err error) {
	return suite.DeriveKeyPair(e.ExternalSecret)
}

// externalInitLabel is the HPKE exporter context of Section 8.3.
const externalInitLabel = "MLS 1.0 external init secret"

// ExternalInit is the joiner's side of RFC 9420 Section 8.3: it encapsulates
// to the group's external_pub and returns the kem_output for the
// ExternalInit proposal and the init_secret to use for the new epoch.
func ExternalInit(externalPub []byte) (kemOutput, initSecret []byte, err error) {
	return suite.ExportSender(externalPub, nil, externalInitLabel, suite.HashSize)
}

// ExternalInitSecret is the members' side of RFC 9420 Section 8.3: the
// init_secret from an ExternalInit proposal's kem_output. It fails with
// suite.ErrDecrypt.
func ExternalInitSecret(externalPriv, kemOutput []byte) ([]byte, error) {
	return suite.ExportRecipient(externalPriv, kemOutput, nil, externalInitLabel, suite.HashSize)
}

// ConfirmationTag returns MAC(confirmation_key, confirmed_transcript_hash)
// (RFC 9420 Section 6.1).
func ConfirmationTag(confirmationKey, confirmedTranscriptHash []byte) []byte {
	return suite.MAC(confirmationKey, confirmedTranscriptHash)
}

// VerifyConfirmationTag reports, in constant time, whether tag is the
// confirmation tag of the transcript hash.
func VerifyConfirmationTag(confirmationKey, confirmedTranscriptHash, tag []byte) bool {
	return suite.VerifyMAC(confirmationKey, confirmedTranscriptHash, tag)
}

// ConfirmedTranscriptHash returns Hash(interim_transcript_hash_[n-1] ||
// ConfirmedTranscriptHashInput_[n]) (RFC 9420 Section 8.2); input is the
// encoded ConfirmedTranscriptHashInput {wire_format, content, signature}.
func ConfirmedTranscriptHash(interimBefore, input []byte) []byte {
	return suite.Hash(append(append([]byte{}, interimBefore...), input...))
}

// InterimTranscriptHash returns Hash(confirmed_transcript_hash ||
// InterimTranscriptHashInput) where InterimTranscriptHashInput is
// {MAC confirmation_tag} and MAC is opaque<V> (RFC 9420 Section 8.2).
func InterimTranscriptHash(confirmed, confirmationTag []byte) []byte {
	in := append([]byte{}, confirmed...)
	in = wire.AppendVarint(in, uint64(len(confirmationTag)))
	return suite.Hash(append(in, confirmationTag...))
}

// PSK is one pre-shared key in the order of the Commit or GroupSecrets.
type PSK struct {
	// ID is the encoded PreSharedKeyID.
	ID []byte
	// Secret is the PSK itself (for a resumption PSK, the resumption_psk of
	// the named epoch).
	Secret []byte
}

// PSKSecret returns psk_secret (RFC 9420 Section 8.4), the all-zero string
// for no PSKs:
//
//	psk_extracted_[i] = Extract(0, psk_[i])
//	psk_input_[i] = ExpandWithLabel(psk_extracted_[i], "derived psk", PSKLabel, Nh)
//	psk_secret_[i+1] = Extract(psk_input_[i], psk_secret_[i])
func PSKSecret(psks []PSK) ([]byte, error) {
	if len(psks) > 0xffff {
		return nil, fmt.Errorf("mls: %d PSKs, at most 65535", len(psks))
	}
	secret := make([]byte, suite.HashSize)
	for i, p := range psks {
		label, err := wire.Marshal(func(b *cryptobyte.Builder) {
			b.AddBytes(p.ID)
			b.AddUint16(uint16(i))
			b.AddUint16(uint16(len(psks)))
		})
		if err != nil {
			return nil, err
		}
		extracted := suite.Extract(zero, p.Secret)
		input := suite.ExpandWithLabel(extracted, "derived psk", label, suite.HashSize)
		secret = suite.Extract(input, secret)
	}
	return secret, nil
}
