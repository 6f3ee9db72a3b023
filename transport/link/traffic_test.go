package link_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
	"github.com/torpor-dev/torpor/transport/relay"
)

// TestTrafficCountsTheSocket: what Traffic says a link sent is, to the
// byte, what crossed a TCP proxy between the device and a real relay: the
// upgrade, the handshake, a state frame and the close.
func TestTrafficCountsTheSocket(t *testing.T) {
	r := worldtest.Start(t, relay.Config{})
	p := mqtttest.StartProxy(t, strings.TrimPrefix(r.URL, "http://"))
	via := "http://" + p.Addr()
	ctx := context.Background()
	c, err := link.Dial(ctx, link.Config{RelayURL: via, Audience: r.URL, Key: didtest.Key(t, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Traffic(); got.Sent == 0 || got.Received == 0 {
		t.Errorf("after Dial, Traffic = %+v; want the upgrade and handshake counted", got)
	}
	pad := bytes.Repeat([]byte("x"), 4096) // a state that shows in the count
	before := c.Traffic().Sent
	if _, err := c.Publish(ctx, wire.State{Mode: "sleep", Pulse: pad}); err != nil {
		t.Fatal(err)
	}
	if d := c.Traffic().Sent - before; d < int64(len(pad)) {
		t.Errorf("publishing a %d-byte pulse counted %d bytes sent", len(pad), d)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := c.Traffic()
	var proxied int64
	for deadline := time.Now().Add(10 * time.Second); ; {
		proxied, _ = p.Bytes() // counted just after it is passed on
		if proxied == got.Sent || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if got.Sent != proxied {
		t.Errorf("Traffic().Sent = %d; the proxy passed %d bytes from the device", got.Sent, proxied)
	}
}
