//go:build integration

package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// freeze stops the node's process (SIGSTOP): its sockets stay open and
// nothing answers, as a hung server or a cut link without a reset.
func (n *natsNode) freeze() { n.signal(syscall.SIGSTOP) }

// thaw lets a frozen node run again (SIGCONT).
func (n *natsNode) thaw() { n.signal(syscall.SIGCONT) }

func (n *natsNode) signal(sig syscall.Signal) {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd != nil {
		cmd.Process.Signal(sig)
	}
}

// relayClients returns how many torpor-relay connections the node holds
// (its /connz).
func (n *natsNode) relayClients(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(n.monitor + "/connz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Connections []struct {
			Name string `json:"name"`
		} `json:"connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, conn := range c.Connections {
		if conn.Name == "torpor-relay" {
			k++
		}
	}
	return k
}

// frozenFailover bounds how long a relay whose NATS server froze may take
// to queue again: the stale connection found (jsstore.PingInterval × 3)
// and a stream leader elected elsewhere if the frozen node led one.
const frozenFailover = 20 * time.Second

// TestFrozenNATSNode: the nats-server that at least one relay is
// connected to is frozen (SIGSTOP). Every relay queues again within
// frozenFailover: a relay finds its connection stale by its pings and
// fails over to another server, instead of refusing every request for
// minutes (nats.go's default ping interval is 2 minutes). Then the node
// runs again and rejoins.
func TestFrozenNATSNode(t *testing.T) {
	f := startProcFleet(t, 3)
	dev := relaytest.Key(t, 9)
	publish(t, f.relays[0].addr, dev, device{mode: "sleep"})
	var victim *natsNode
	for _, n := range f.procs {
		if n.relayClients(t) > 0 {
			victim = n
			break
		}
	}
	if victim == nil {
		t.Fatal("no nats-server holds a relay's connection")
	}
	victim.freeze()
	frozen := time.Now()
	defer victim.thaw()
	tok := relaytest.Token(t, relaytest.Key(t, 2200), publicURL)
	for i, r := range f.relays {
		for k := 0; ; k++ {
			a, err := send(r.addr, dev.DID().String(), tok, body(fmt.Sprintf("fz%d-%d", i, k), 10))
			if err == nil && a.status == http.StatusServiceUnavailable && a.Queued {
				t.Logf("relay %d queued %v after %s froze", i+1, time.Since(frozen).Round(100*time.Millisecond), victim.name)
				break
			}
			if time.Since(frozen) > frozenFailover {
				t.Fatalf("relay %d still not queueing %v after %s froze: %v %v", i+1, frozenFailover, victim.name, a, err)
			}
		}
	}
	victim.thaw()
	waitRejoined(t, f, victim)
}
