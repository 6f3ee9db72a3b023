// Package sessiontest makes, for tests, the session objects that a
// device publishes and that the relay and the session's checks read.
//
// Use:
//
//	kp := sessiontest.KeyPackage(t, dev.DID(), dev, now)   // genuine
//	kp = sessiontest.KeyPackage(t, dev.DID(), other, now)  // the device's DID, another key
package sessiontest

import (
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/session"
)

// KeyPackage returns a KeyPackage wrapped in an MLSMessage (RFC 9420,
// Sections 6 and 10), the form a device publishes, whose basic credential
// names claim (session.NewCredential) and which signer's key signs, valid
// around at. With claim signer's DID it is a genuine KeyPackage, as
// session.NewKeyPackage makes; with another it is bound to a DID whose
// key did not sign it.
func KeyPackage(tb testing.TB, claim did.DID, signer *did.PrivateKey, at time.Time) []byte {
	tb.Helper()
	kp, _, err := mls.NewKeyPackage(&mls.Config{Time: func() time.Time { return at }}, session.NewCredential(claim), signer.Ed25519())
	if err != nil {
		tb.Fatal(err)
	}
	b, err := (&mls.MLSMessage{Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatKeyPackage, KeyPackage: kp}).Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
