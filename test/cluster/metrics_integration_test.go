//go:build integration

package cluster

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// TestGaugesFromSharedStore: records queued through one relay show in
// every relay's torpor_relay_queue_messages, read from the shared store,
// and leave it when the device acknowledges them through another.
func TestGaugesFromSharedStore(t *testing.T) {
	f := startFleet(t, 3)
	dev := relaytest.Key(t, 13)
	publish(t, f.relays[0].addr, dev, device{mode: "sleep"})
	for i := range 7 {
		mustQueue(t, f.relays[0].addr, dev.DID().String(), relaytest.Token(t, relaytest.Key(t, 4000+i), publicURL), body(fmt.Sprint("g", i), 30))
	}
	for i, r := range f.relays {
		if got := gauge(t, r.addr, "torpor_relay_queue_messages"); got != 7 {
			t.Errorf("relay %d: torpor_relay_queue_messages = %v, want 7", i+1, got)
		}
	}
	drain(t, f.relays[1].addr, dev, true)
	if got := gauge(t, f.relays[2].addr, "torpor_relay_queue_messages"); got != 0 {
		t.Errorf("relay 3 after the drain through relay 2: torpor_relay_queue_messages = %v, want 0", got)
	}
}

// gauge scrapes the relay's /metrics and returns the unlabelled metric.
func gauge(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := client.Get(addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("/metrics of %s has no %s", addr, name)
	return 0
}
