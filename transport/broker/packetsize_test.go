package broker

import (
	"testing"

	"github.com/torpor-dev/torpor/transport/mqtt/login"
)

// TestMaxPacketSizeAgrees: the embedded broker refuses what a Torpor client
// announces it cannot take, and no less.
func TestMaxPacketSizeAgrees(t *testing.T) {
	if DefaultMaxPacketSize != login.MaxPacketSize {
		t.Errorf("broker.DefaultMaxPacketSize %d, login.MaxPacketSize %d: want them equal", DefaultMaxPacketSize, login.MaxPacketSize)
	}
}
