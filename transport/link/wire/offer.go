package wire

import "fmt"

// Offer is the update a relay's rollout asks a device to install, sent in
// the state-ok that answers the device's state at its wake
// (Frame.Offer, Accepted.Offer). The device fetches and verifies the
// target through the relay's update repository as for any target (TUF
// client workflow, docs/updates.md); the offer only names it, so a relay
// cannot make a device install anything its owner's keys did not sign.
// A device that predates offers ignores the member (the link's CBOR
// decoder skips unknown map keys), as a relay that predates them never
// sends one.
type Offer struct {
	// Rollout is the id of the rollout that offers it.
	Rollout string `cbor:"rollout"`
	// Target is the TUF target path of the build; Version its version.
	Target  string `cbor:"target"`
	Version string `cbor:"version"`
	// SHA256 is the target's SHA-256 (hex), as its targets metadata says.
	SHA256 string `cbor:"sha256,omitempty"`
}

// MaxOfferMember bounds each member of an Offer.
const MaxOfferMember = 256

// Check returns an error if o is not an offer a device should read: a
// member missing or longer than MaxOfferMember.
func (o *Offer) Check() error {
	if o.Rollout == "" || o.Target == "" || o.Version == "" {
		return fmt.Errorf("%w: an update offer without a rollout, target or version", ErrProtocol)
	}
	for _, m := range []string{o.Rollout, o.Target, o.Version, o.SHA256} {
		if len(m) > MaxOfferMember {
			return fmt.Errorf("%w: an update offer member of %d bytes, at most %d", ErrProtocol, len(m), MaxOfferMember)
		}
	}
	return nil
}
