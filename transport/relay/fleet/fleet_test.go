package fleet_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/torpor-dev/torpor/clock"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/session/kpcheck"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/transport/relay/fleet"
)

const publicURL = "http://fleet.torpor.test"

// startFleet runs n relays in this process on one JetStream server, as
// cmd/torpor-relay joins them on --store jetstream: each on its own
// connection, store, agent-state cache, Fleet and link presence.
func startFleet(t *testing.T, n int) fleetRun {
	t.Helper()
	return startFleetOn(t, n, nil)
}

// fleetRun is a fleet that startFleetOn started: the relays' URLs, each
// relay's NATS connection (the store's and the Fleet's) and presence
// view, and the first relay's store.
type fleetRun struct {
	urls  []string
	conns []*nats.Conn
	links []*jsstore.Links
	store *jsstore.Conn
}

// startFleetOn is startFleet with the Fleets on clk (nil: the real clock).
func startFleetOn(t *testing.T, n int, clk clock.Clock) fleetRun {
	t.Helper()
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	var run fleetRun
	for range n {
		c, err := jsstore.Open(context.Background(), jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := c.StateCache()
		if err != nil {
			t.Fatal(err)
		}
		f := fleet.New(c.NATS(), clk, nil)
		links, err := c.Links(f.ID())
		if err != nil {
			t.Fatal(err)
		}
		f.UsePresence(links, jsstore.LinkKeyRefresh)
		r, err := relay.New(relay.Config{PublicURL: publicURL, Stores: relay.Stores{Queue: c.Queue(), States: c.Agents(), StateReads: sc}, Peers: f, KeyPackages: kpcheck.Verifier{},
			Access: relay.Access{AdmitAll: true}}) // --admission open, the default
		if err != nil {
			t.Fatal(err)
		}
		f.Serve(r.Link())
		hs := httptest.NewServer(r.Handler())
		t.Cleanup(func() { hs.Close(); r.Link().Close(); f.Close(); c.Close() })
		run.urls, run.conns, run.links = append(run.urls, hs.URL), append(run.conns, c.NATS()), append(run.links, links)
		if run.store == nil {
			run.store = c
		}
	}
	return run
}

// linkDevice links dev to relay i as linkDevice does and waits until every
// other relay's presence view shows the link.
func (run fleetRun) linkDevice(t *testing.T, i int, dev *did.PrivateKey, mode string) *link.Client {
	t.Helper()
	c := linkDevice(t, run.urls[i], dev, mode)
	run.waitUp(t, i, dev, true)
	return c
}

// waitUp waits until the presence view of every relay but i says up for
// dev's link.
func (run fleetRun) waitUp(t *testing.T, i int, dev *did.PrivateKey, up bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for j, l := range run.links {
		for j != i {
			if got, known := l.Up(dev.DID().String()); known && got == up {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("relay %d's presence view does not say up=%v for the device's link", j, up)
			}
			time.Sleep(2 * time.Millisecond) // the watch delivers on its own goroutine
		}
	}
}

// linkDevice links dev to the relay at url with a handler that answers
// every live request with its caller's DID, and publishes mode.
func linkDevice(t *testing.T, url string, dev *did.PrivateKey, mode string) *link.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: url, Audience: publicURL, Key: dev,
		Handler: func(_ context.Context, req wire.Request) wire.Response {
			return wire.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"from":"` + req.From + `"}`)}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b := c.Hello()
	card, err := a2a.BuildCard(a2a.CardOptions{Name: "d", BaseURL: publicURL + "/a/" + dev.DID().String(), OfflineMode: mode, Bounds: &b})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := a2a.SignCard(card, dev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, wire.State{Mode: mode, Card: raw}); err != nil {
		t.Fatal(err)
	}
	return c
}

// post sends a SendMessage for dev from sender to the relay at url and
// returns the status and body.
func post(t *testing.T, url string, dev, sender *did.PrivateKey) (int, []byte) {
	t.Helper()
	tok, err := bearer.Issue(sender, publicURL, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// A Governed Object part: the relay refuses what the agent never takes.
	body := `{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"mediaType":"` +
		a2a.MediaTypeDataObject + `","object":{"filler":"hi"}}}]}}}`
	req, _ := http.NewRequest("POST", url+"/a/"+dev.DID().String()+"/a2a/jsonrpc", bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}
