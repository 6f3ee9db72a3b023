package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// TestOfferMemberCompatible: a state-ok's offer round-trips; a device
// that predates offers decodes the frame with its bounds and without
// error; a state-ok without one decodes as nil.
func TestOfferMemberCompatible(t *testing.T) {
	o := &Offer{Rollout: "agent-1.4.0", Target: "torpor-agent/linux-armv6/1.4.0", Version: "1.4.0", SHA256: strings.Repeat("ab", 32)}
	b, err := Encode(&Frame{T: FrameStateOK, ID: 3, Bounds: &queuebounds.Bounds{MaxMessages: 1}, Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil || got.Offer == nil || *got.Offer != *o {
		t.Fatalf("state-ok with an offer decodes to %+v, %v", got.Offer, err)
	}
	checkOldDeviceDecodes(t, b)
	b, _ = Encode(&Frame{T: FrameStateOK, ID: 4, Bounds: &queuebounds.Bounds{}})
	if got, err := Decode(b); err != nil || got.Offer != nil {
		t.Errorf("state-ok without an offer decodes to %+v, %v; want nil", got.Offer, err)
	}
}

// TestOfferCheck: an offer without a rollout, target or version, or with
// a member over MaxOfferMember, is a protocol error.
func TestOfferCheck(t *testing.T) {
	long := strings.Repeat("x", MaxOfferMember+1)
	for _, o := range []Offer{{Target: "t", Version: "1"}, {Rollout: "r", Version: "1"}, {Rollout: "r", Target: "t"}, {Rollout: "r", Target: "t", Version: long}} {
		if err := o.Check(); !errors.Is(err, ErrProtocol) {
			t.Errorf("Check(%+v) = %v, want ErrProtocol", o, err)
		}
	}
	if err := (&Offer{Rollout: "r", Target: "t", Version: "1"}).Check(); err != nil {
		t.Errorf("Check of a good offer = %v", err)
	}
}
