package relay

import (
	"fmt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay/console"
)

// checkStatus verifies a device's signed status (link wire.State.Status):
// at most wire.MaxStatus bytes, and what ParseStatus checks. The relay
// keeps it verbatim, so that whoever reads it later (the fleet console of
// any relay sharing the store) can check the signature again.
func checkStatus(b []byte, agent did.DID) error {
	if len(b) > wire.MaxStatus {
		return fmt.Errorf("status of %d bytes exceeds %d", len(b), wire.MaxStatus)
	}
	_, err := ParseStatus(b, agent)
	return err
}

// ParseStatus verifies a signed status of agent (console.VerifyStatus)
// and returns its payload.
func ParseStatus(b []byte, agent did.DID) (wire.Status, error) { return console.VerifyStatus(b, agent) }
