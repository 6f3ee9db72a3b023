package broker

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
)

// HandoverProperty is the CONNECT User Property (MQTT 5.0 Section
// 3.1.2.11.8) in which a device that rotated its key presents the key
// handover its old key signed (runtime/manage's rotate-keys): a Governed
// Object of purpose HandoverPurpose whose payload names the old DID, the
// new one and the device name.
const (
	HandoverProperty = "torpor-key-handover"
	HandoverPurpose  = "torpor:key-handover"
)

// handover returns the new owner of name that the CONNECT's handover
// proves: a handover signed (RFC 8032 Ed25519 over the RFC 8785 canonical
// form, package governed) by owner, the name's pinned DID, naming name and
// the connecting DID d. Replaying an old handover gains nothing: it names
// an old key as "old", which no longer owns the name.
func handover(pk packets.Packet, name string, owner, d did.DID) error {
	var raw string
	for _, p := range pk.Properties.User {
		if p.Key == HandoverProperty {
			raw = p.Val
		}
	}
	if raw == "" {
		return errors.New("no key handover")
	}
	o, err := governed.Parse([]byte(raw))
	if err != nil {
		return fmt.Errorf("key handover: %v", err)
	}
	if err := o.VerifySignature(); err != nil {
		return fmt.Errorf("key handover: %v", err)
	}
	var p struct{ Old, New, Device string }
	if o.Governance.Purpose != HandoverPurpose || json.Unmarshal(o.Payload, &p) != nil {
		return errors.New("key handover: not one")
	}
	if o.Issuer != owner || p.Old != owner.String() || p.New != d.String() || p.Device != name {
		return fmt.Errorf("key handover from %s to %s for %q does not hand %q from %s to %s", o.Issuer, truncate(p.New), truncate(p.Device), name, owner, d)
	}
	return nil
}
