package relay

import (
	"fmt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// checkStatus verifies a device's signed status (link wire.State.Status):
// a Governed Object of at most wire.MaxStatus bytes, issued by agent and
// signed with its key (draft Section 5.4), with purpose wire.PurposeStatus
// and a payload wire.ParseStatus accepts. The relay keeps it verbatim, so
// that whoever reads it later (the fleet console of any relay sharing the
// store) can check the signature again.
func checkStatus(b []byte, agent did.DID) error {
	if len(b) > wire.MaxStatus {
		return fmt.Errorf("status of %d bytes exceeds %d", len(b), wire.MaxStatus)
	}
	_, err := ParseStatus(b, agent)
	return err
}

// ParseStatus verifies a signed status of agent as checkStatus does and
// returns its payload.
func ParseStatus(b []byte, agent did.DID) (wire.Status, error) {
	o, err := governed.Parse(b)
	if err != nil {
		return wire.Status{}, fmt.Errorf("status: %v", err)
	}
	if o.Issuer != agent {
		return wire.Status{}, fmt.Errorf("status issued by %s, not by the agent", o.Issuer)
	}
	if err := o.VerifySignature(); err != nil {
		return wire.Status{}, fmt.Errorf("status: %v", err)
	}
	if o.Governance.Purpose != wire.PurposeStatus {
		return wire.Status{}, fmt.Errorf("status has purpose %q, want %q", o.Governance.Purpose, wire.PurposeStatus)
	}
	return wire.ParseStatus(o.Payload)
}
