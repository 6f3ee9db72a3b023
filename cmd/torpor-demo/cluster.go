package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/test/procs"
)

// relayHeader is the response header in which the fleet's balancer names
// the relay that answered, for the narration.
const relayHeader = "Torpor-Demo-Relay"

// fleet is what Config.Cluster adds: a 3-node JetStream cluster embedded
// in the demo's process (store/jsstore/jsserver, file storage under the
// demo's directory, loopback) and the balancer in front of the relays.
type fleet struct {
	nats []*jsserver.Server
	lb   *balancer
}

func (f *fleet) close() {
	if f.lb != nil {
		f.lb.close()
	}
	jsserver.Shutdown(f.nats)
}

// startFleet starts the NATS cluster, the balancer and three relays with
// --store jetstream (R3 streams, the default --nats-replicas) behind it,
// one public origin: the balancer's. The first relay creates the streams
// and runs the embedded MQTT broker that the others name; the other two
// start together once it serves, so the agents, which start after the
// relays, lag the first relay's clock by two start-ups (see startAll).
func (d *demo) startFleet(ctx context.Context) error {
	d.fleet = &fleet{}
	nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var err error
	if d.fleet.nats, err = jsserver.StartCluster(nctx, d.path("nats"), 3, jsserver.Options{}); err != nil {
		return fmt.Errorf("demo: NATS cluster: %w", err)
	}
	var urls []string
	for _, s := range d.fleet.nats {
		urls = append(urls, s.URL())
	}
	d.n.Event("nats", KindStart, "3-node JetStream cluster in the demo's process: %s, file storage in %s", strings.Join(urls, " "), d.path("nats"))
	if d.fleet.lb, err = startBalancer(); err != nil {
		return err
	}
	d.relayURL = d.fleet.lb.url
	d.n.Event("balancer", KindStart, "%s: the fleet's public origin; device links and senders' requests go round robin over the relays", d.relayURL)
	common := []string{"--store", "jetstream", "--nats", strings.Join(urls, ","), "--public-url", d.relayURL}
	first, err := d.fleetRelay(ctx, 1, append(common, "--mqtt-listen", "127.0.0.1:0"))
	if err != nil {
		return err
	}
	d.metricsURL, d.mqttURL = first.addr, first.mqtt
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { _, errs[i] = d.fleetRelay(ctx, i+2, append(common, "--mqtt-broker", d.mqttURL)) })
	}
	wg.Wait()
	slices.SortFunc(d.relays, func(a, b *relayProc) int { return strings.Compare(a.name, b.name) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// fleetRelay starts relay n of the fleet, adds it to the balancer and
// narrates it.
func (d *demo) fleetRelay(ctx context.Context, n int, args []string) (*relayProc, error) {
	r, err := d.startRelay(ctx, fmt.Sprintf("relay%d", n), args...)
	if r != nil {
		d.mu.Lock()
		d.relays = append(d.relays, r) // stopped by stopAll, also after an error
		d.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	if err := d.fleet.lb.add(r.name, r.addr); err != nil {
		return nil, err
	}
	broker := "embedded MQTT broker " + r.mqtt
	if n > 1 {
		broker = "MQTT broker " + d.mqttURL + " (relay1's)"
	}
	d.n.Event(r.name, KindStart, "torpor-relay serving %s (relay %d of 3; A2A, device links, /metrics), %s, store: JetStream on the cluster, R3 streams, clock ×%g",
		r.addr, n, broker, d.cfg.scale())
	d.bg.Go(func() { r.proc.Out().Follow(ctx, func(l procs.Line) { d.relayLine(r, l) }) })
	return r, nil
}

// balancer is the fleet's load balancer, as a deployment puts one in
// front of its relays (docs/scale-out.md): a reverse proxy on loopback
// that sends each device link (GET /link, a WebSocket) and each other
// request to the next relay in turn, links and requests counted apart,
// and names the relay that answered in relayHeader.
type balancer struct {
	url  string
	srv  *http.Server
	mu   sync.Mutex
	back []*url.URL // guarded by mu, with names
	// names maps a relay's host:port to its name; guarded by mu.
	names       map[string]string
	links, reqs atomic.Uint64
}

func startBalancer() (*balancer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &balancer{url: "http://" + ln.Addr().String(), names: map[string]string{}}
	rp := &httputil.ReverseProxy{Rewrite: b.rewrite, ModifyResponse: b.tag,
		ErrorLog: log.New(io.Discard, "", 0)} // a failed request shows as the sender's 502
	b.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go b.srv.Serve(ln)
	return b, nil
}

// add puts the relay name serving at addr (http://host:port) in the turn.
func (b *balancer) add(name, addr string) error {
	u, err := url.Parse(addr)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.back = append(b.back, u)
	b.names[u.Host] = name
	b.mu.Unlock()
	return nil
}

func (b *balancer) rewrite(pr *httputil.ProxyRequest) {
	n := &b.reqs
	if pr.In.URL.Path == "/link" {
		n = &b.links
	}
	b.mu.Lock()
	u := b.back[(n.Add(1)-1)%uint64(len(b.back))]
	b.mu.Unlock()
	pr.SetURL(u)
	pr.Out.Host = pr.In.Host // the public origin, as a balancer passes it
}

func (b *balancer) tag(resp *http.Response) error {
	b.mu.Lock()
	name := b.names[resp.Request.URL.Host]
	b.mu.Unlock()
	resp.Header.Set(relayHeader, name)
	return nil
}

func (b *balancer) close() { b.srv.Close() }

// answeredKey is the context key under which deliver passes a *string for
// taggedTransport to fill with the relay that answered.
type answeredKey struct{}

// taggedTransport reads relayHeader from each answer into the *string the
// request's context carries under answeredKey.
type taggedTransport struct{ base http.RoundTripper }

func (t taggedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if s, ok := r.Context().Value(answeredKey{}).(*string); ok && resp != nil {
		if v := resp.Header.Get(relayHeader); v != "" {
			*s = v
		}
	}
	return resp, err
}
