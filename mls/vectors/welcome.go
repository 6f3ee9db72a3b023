package vectors

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// welcome: decrypting a Welcome for a KeyPackage, verifying the GroupInfo
// signature and confirmation tag (RFC 9420 Section 12.4.3.1).
func init() {
	register(&kind{name: "welcome", requires: []string{"init_priv", "welcome"}, excludes: []string{"epochs"}, run: decoded(runWelcome)})
}

func runWelcome(v *vectorfmt.Welcome) error {
	kp, err := parseKeyPackageMessage(v.KeyPackage)
	if err != nil {
		return err
	}
	w, err := parseWelcomeMessage(v.Welcome)
	if err != nil {
		return err
	}
	opened, err := mls.OpenWelcome(w, kp, v.InitPriv, nil)
	if err != nil {
		return fmt.Errorf("OpenWelcome: %w", err)
	}
	if err := opened.GroupInfo.Verify(v.SignerPub); err != nil {
		return fmt.Errorf("GroupInfo signature: %w", err)
	}
	// A Welcome decrypted with another key must fail, opaquely.
	other := bytes.Clone(v.InitPriv)
	other[0] ^= 0x40
	if _, err := mls.OpenWelcome(w, kp, other, nil); !errors.Is(err, mls.ErrDecryption) {
		return fmt.Errorf("OpenWelcome with a wrong init key = %v, want ErrDecryption", err)
	}
	return nil
}

// parseKeyPackageMessage decodes an MLSMessage carrying a KeyPackage and
// checks that it re-encodes to the same bytes.
func parseKeyPackageMessage(b []byte) (*mls.KeyPackage, error) {
	m, err := parseMessage(b, mls.WireFormatKeyPackage)
	if err != nil {
		return nil, err
	}
	return m.KeyPackage, nil
}

// parseWelcomeMessage decodes an MLSMessage carrying a Welcome.
func parseWelcomeMessage(b []byte) (*mls.Welcome, error) {
	m, err := parseMessage(b, mls.WireFormatWelcome)
	if err != nil {
		return nil, err
	}
	return m.Welcome, nil
}

func parseMessage(b []byte, wf mls.WireFormat) (*mls.MLSMessage, error) {
	m, err := mls.ParseMLSMessage(b)
	if err != nil {
		return nil, err
	}
	if m.WireFormat != wf {
		return nil, fmt.Errorf("MLSMessage carries wire format %d, want %d", m.WireFormat, wf)
	}
	if again, err := m.Marshal(); err != nil || !bytes.Equal(again, b) {
		return nil, fmt.Errorf("MLSMessage does not re-encode to the same bytes (%v)", err)
	}
	return m, nil
}
