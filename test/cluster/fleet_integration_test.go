//go:build integration

package cluster

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// publicURL is the fleet's one origin, behind which a load balancer would
// spread senders over the relays; every token names it.
const publicURL = "http://fleet.torpor.test"

// fleet is a NATS cluster and the relays that share it: servers in the
// test process (nats) or nats-server child processes (procs).
type fleet struct {
	nats   []*jsserver.Server
	procs  []*natsNode
	relays []*relayProc
}

// startFleet starts a 3-node JetStream cluster in the test process and n
// relays on it.
func startFleet(t testing.TB, n int, extra ...string) *fleet {
	t.Helper()
	f := startNATS(t)
	var urls []string
	for _, s := range f.nats {
		urls = append(urls, s.URL())
	}
	f.startRelays(t, urls, n, extra...)
	return f
}

// startNATS starts a 3-node JetStream cluster in the test process, shut
// down when the test ends, and returns a fleet of it with no relays yet.
func startNATS(t testing.TB) *fleet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns, err := jsserver.StartCluster(ctx, t.TempDir(), 3, jsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{nats: ns}
	t.Cleanup(func() { jsserver.Shutdown(f.nats) })
	return f
}

// startProcFleet starts a 3-node JetStream cluster of nats-server
// processes, which a test can kill with SIGKILL, and n relays on it.
func startProcFleet(t testing.TB, n int, extra ...string) *fleet {
	t.Helper()
	f := &fleet{procs: startNATSProcs(t)}
	var urls []string
	for _, p := range f.procs {
		urls = append(urls, p.url)
	}
	f.startRelays(t, urls, n, extra...)
	return f
}

func (f *fleet) startRelays(t testing.TB, urls []string, n int, extra ...string) {
	t.Helper()
	for range n {
		f.relays = append(f.relays, startRelay(t, t.TempDir(), jetstreamArgs(urls, extra)...))
	}
}

// jetstreamArgs are the flags of a fleet's relay on the NATS servers
// urls (the first one first), followed by extra.
func jetstreamArgs(urls []string, extra []string) []string {
	return append([]string{"--store", "jetstream", "--nats", strings.Join(urls, ","), "--public-url", publicURL}, extra...)
}

// relayProc is a running torpor-relay process.
type relayProc struct {
	*relaytest.Relay
	addr string // http://127.0.0.1:port
}

// startRelay runs torpor-relay, listing fleetOperator as its operator, with
// loopback ports chosen by the kernel and waits until it serves.
func startRelay(t testing.TB, dataDir string, extra ...string) *relayProc {
	t.Helper()
	r := relaytest.Start(t, dataDir, append([]string{"--operator", fleetOperator(t).DID().String()}, extra...)...)
	return &relayProc{Relay: r, addr: r.URL}
}

// kill sends SIGKILL and reaps the process.
func (p *relayProc) kill() { p.Kill() }

// fleetOperator is the operator every relay of these tests lists.
func fleetOperator(t testing.TB) *did.PrivateKey { return relaytest.Key(t, 0xA0) }

// admitDevice admits dev through the relay at addr, as fleetOperator: the
// fleet's devices get the relays' own bounds, not a new device's
// probation. The admission is in the shared store, for every relay.
func admitDevice(t testing.TB, addr string, dev *did.PrivateKey) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, addr+"/operator/agents/"+dev.DID().String()+"/admit", nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := bearer.IssuePurpose(fleetOperator(t), publicURL, bearer.OperatorPurpose(req.Method, req.URL.EscapedPath()), time.Now(), bearer.OperatorTTL)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", bearer.Authorization(tok))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admitting %s: %s", dev.DID(), resp.Status)
	}
}

// device is what a device publishes when it links.
type device struct {
	mode       string
	bounds     *queuebounds.Bounds // tighter bounds the device asks for
	kps        [][]byte
	lastResort []byte
}

// publish links dev to the relay at addr and publishes d, with a signed
// card naming the bounds in force.
func publish(t testing.TB, addr string, dev *did.PrivateKey, d device) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admitDevice(t, addr, dev)
	c, err := link.Dial(ctx, link.Config{RelayURL: addr, Audience: publicURL, Key: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := c.Hello().Clamp(d.bounds)
	raw := relaytest.SignedCard(t, publicURL, dev, a2a.CardOptions{Name: "sleeper", OfflineMode: d.mode, Bounds: &b})
	if _, err := c.Publish(ctx, wire.State{Mode: d.mode, Card: raw, Bounds: d.bounds, KeyPackages: d.kps, LastResort: d.lastResort}); err != nil {
		t.Fatal(err)
	}
}
