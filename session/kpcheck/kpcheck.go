// Package kpcheck checks a KeyPackage a device publishes to its relay
// over the device link, before the relay adds it to the agent's pool. The
// relay's packages (transport/relay, transport/link/server) may not import
// package mls or package session (internal/deptest): transport/relay
// declares the check it needs as an interface (relay.KeyPackageVerifier)
// and the relay's binary, cmd/torpor-relay, wires Verifier in. The check
// is the one an initiator makes (session.CheckKeyPackage), so that the
// relay refuses exactly what every sender would refuse later, when it
// would cost them a session:
//
//   - the bytes are an MLSMessage (RFC 9420, Section 6) of wire format
//     mls_key_package holding one KeyPackage and nothing after it;
//   - the KeyPackage verifies (RFC 9420, Section 10.1): version mls10,
//     cipher suite 0x0001, valid HPKE keys, init_key different from the
//     encryption key, a LeafNode with leaf_node_source key_package and a
//     lifetime that includes now, the LeafNode's signature, and the
//     KeyPackage's signature under the LeafNode's signature_key;
//   - the credential binding (draft-chapman-a2a-mls-03 Section 4.3): a
//     basic credential whose identity is the agent's did:key, and a
//     signature_key equal to the Ed25519 key inside that DID — the DID of
//     the device whose link published it (Section 6.2's expected
//     identity).
package kpcheck

import (
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/session"
)

// Verifier implements transport/relay's KeyPackageVerifier. Its zero
// value is ready.
type Verifier struct{}

// VerifyKeyPackage returns nil when kp is an MLSMessage-wrapped KeyPackage
// of agent that is valid at now (the package doc lists the checks), else
// an error that says which check failed. It never includes key material
// beyond a short prefix of a mismatched key.
func (Verifier) VerifyKeyPackage(agent did.DID, kp []byte, now time.Time) error {
	m, err := mls.ParseMLSMessage(kp)
	if err != nil {
		return err
	}
	if m.WireFormat != mls.WireFormatKeyPackage || m.KeyPackage == nil {
		return fmt.Errorf("an MLSMessage of wire format %d, not a KeyPackage", m.WireFormat)
	}
	cfg := &mls.Config{Time: func() time.Time { return now }}
	_, err = session.CheckKeyPackage(cfg, m.KeyPackage, agent)
	return err
}
