package server

import (
	"context"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestThePingIntervalTheDeviceAsksFor: the relay pings a link every
// wire.PingInterval, or every interval up to wire.MaxPingInterval that the
// device asked for (link.Config.PingInterval, wire.PingHeader), and pings
// it then: the pinger's wait is that interval.
func TestThePingIntervalTheDeviceAsksFor(t *testing.T) {
	tests := []struct {
		name string
		ask  time.Duration
		want time.Duration
	}{
		{"none asked", 0, wire.PingInterval},
		{"every 40 s", 40 * time.Second, 40 * time.Second},
		{"the longest", wire.MaxPingInterval, wire.MaxPingInterval},
		{"longer than granted", time.Hour, wire.MaxPingInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			clk := clocktest.NewRecorder(time.Now(), 8)
			h.srv.Clock = clk
			c, err := link.Dial(context.Background(), link.Config{RelayURL: h.http.URL, Key: didtest.New(t), PingInterval: tt.ask})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if d := <-clk.Made; d != HandshakeTimeout {
				t.Fatalf("the first timer waits %v, want the handshake's %v", d, HandshakeTimeout)
			}
			if d := <-clk.Made; d != tt.want {
				t.Errorf("a link that asked for pings every %v is pinged every %v, want %v", tt.ask, d, tt.want)
			}
			// The ping goes out; the link reads it (and counts its bytes)
			// before it writes the pong the relay waits for.
			got := c.Traffic().Received
			clk.Advance(tt.want)
			if d := <-clk.Made; d != tt.want {
				t.Errorf("after the first ping the next waits %v, want %v", d, tt.want)
			}
			if c.Traffic().Received == got {
				t.Error("the link received no ping")
			}
		})
	}
}
