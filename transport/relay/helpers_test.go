package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// t0 is 12:00:00 UTC; with the default window of the test device (see
// window11) it is outside the window.
var t0 = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

// window11 is the vectors' window: minute 11, five minutes.
var window11 = &wire.Window{Minute: 11, LengthSec: 300}

type harness struct {
	relay  *Relay
	srv    *httptest.Server
	clk    *clocktest.Clock
	q      *queue.Bolt
	states *agents.Bolt
	dir    string
}

func newHarness(tb testing.TB, mod func(*Config)) *harness {
	tb.Helper()
	h := &harness{clk: clocktest.New(t0), dir: tb.TempDir()}
	var err error
	if h.q, err = queue.OpenBolt(filepath.Join(h.dir, "queue.db"), nil); err != nil {
		tb.Fatal(err)
	}
	if h.states, err = agents.OpenBolt(filepath.Join(h.dir, "agents.db"), nil); err != nil {
		tb.Fatal(err)
	}
	h.srv = httptest.NewUnstartedServer(nil)
	cfg := Config{PublicURL: "http://" + h.srv.Listener.Addr().String(), Stores: Stores{Queue: h.q, States: h.states}, Clock: h.clk, Rand: bytes.NewReader(make([]byte, 4096)),
		KeyPackages: opaqueKeyPackages{}}
	if mod != nil {
		mod(&cfg)
	}
	if h.relay, err = New(cfg); err != nil {
		tb.Fatal(err)
	}
	h.srv.Config.Handler = h.relay.Handler()
	h.srv.Start()
	tb.Cleanup(func() {
		h.relay.Link().Close()
		h.srv.Close()
		h.q.Close()
		h.states.Close()
	})
	return h
}

// opaqueKeyPackages is the KeyPackage verifier of the tests that publish
// KeyPackage-shaped bytes (kp): it accepts every KeyPackage. The tests of
// the real verifier (session/kpcheck) are in keypackage_check_test.go.
type opaqueKeyPackages struct{}

func (opaqueKeyPackages) VerifyKeyPackage(did.DID, []byte, time.Time) error { return nil }

// device links key, publishes mode (with a card carrying the bounds in
// force, and kps) and returns the link.
type deviceOpts struct {
	window  *wire.Window
	bounds  *queuebounds.Bounds
	kps     [][]byte
	lastRes []byte // the last-resort KeyPackage
	pulse   []byte
	handler link.HandlerFunc
	card    func(c *a2a.Card) // edits the card before signing
	signer  *did.PrivateKey
}

func (h *harness) device(tb testing.TB, key *did.PrivateKey, mode string, o deviceOpts) *link.Client {
	tb.Helper()
	c := h.dialWith(tb, key, o.handler)
	if _, err := c.Publish(context.Background(), h.state(tb, key, c.Hello(), mode, o)); err != nil {
		tb.Fatal(err)
	}
	return c
}

// dial links key to the relay, publishing nothing; the link closes when
// the test ends.
func (h *harness) dial(tb testing.TB, key *did.PrivateKey) *link.Client {
	tb.Helper()
	return h.dialWith(tb, key, nil)
}

func (h *harness) dialWith(tb testing.TB, key *did.PrivateKey, handler link.HandlerFunc) *link.Client {
	tb.Helper()
	c, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: key, Clock: h.clk, Handler: handler})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

func (h *harness) state(tb testing.TB, key *did.PrivateKey, hello queuebounds.Bounds, mode string, o deviceOpts) wire.State {
	tb.Helper()
	if o.window == nil {
		o.window = window11
	}
	b := hello.Clamp(o.bounds)
	card, err := a2a.BuildCard(a2a.CardOptions{Name: "dev", BaseURL: h.srv.URL + "/a/" + key.DID().String(), OfflineMode: mode, Bounds: &b})
	if err != nil {
		tb.Fatal(err)
	}
	if o.card != nil {
		o.card(card)
	}
	signer := o.signer
	if signer == nil {
		signer = key
	}
	raw, err := a2a.SignCard(card, signer)
	if err != nil {
		tb.Fatal(err)
	}
	return wire.State{Mode: mode, Window: o.window, Card: raw, KeyPackages: o.kps, LastResort: o.lastRes, Pulse: o.pulse, Bounds: o.bounds}
}

// publishOffline publishes mode for key and closes the link, as a device
// does before it sleeps.
func (h *harness) publishOffline(tb testing.TB, key *did.PrivateKey, mode string, o deviceOpts) {
	tb.Helper()
	c := h.device(tb, key, mode, o)
	c.Close()
	<-h.relay.Link().Gone(key.DID().String()) // the relay notices the close asynchronously
}

type resp struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

// post sends body to agent's JSON-RPC endpoint as sender (nil: no token).
func (h *harness) post(tb testing.TB, agent did.DID, sender *did.PrivateKey, version string, body string) resp {
	tb.Helper()
	req, _ := http.NewRequest("POST", h.srv.URL+"/a/"+agent.String()+"/a2a/jsonrpc", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	if sender != nil {
		tok, err := bearer.Issue(sender, h.relay.cfg.PublicURL, h.clk.Now(), 0)
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("Authorization", bearer.Authorization(tok))
	}
	return h.do(tb, req)
}

func (h *harness) get(tb testing.TB, path string) resp {
	tb.Helper()
	req, _ := http.NewRequest("GET", h.srv.URL+path, nil)
	return h.do(tb, req)
}

// getCard gets path, a card URL, as an A2A client of version (A2A-Version;
// "" sends none).
func (h *harness) getCard(tb testing.TB, path, version string) resp {
	tb.Helper()
	req, _ := http.NewRequest("GET", h.srv.URL+path, nil)
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	return h.do(tb, req)
}

// admit admits key's agent, as an operator does: it leaves probation.
func (h *harness) admit(tb testing.TB, key *did.PrivateKey) {
	tb.Helper()
	if err := h.states.Admit(context.Background(), key.DID().String()); err != nil {
		tb.Fatal(err)
	}
}

// getKP fetches path, a KeyPackage URL, with a token of a fixed sender
// (fetches need one).
func (h *harness) getKP(tb testing.TB, path string) resp {
	tb.Helper()
	return h.getAs(tb, path, didtest.Key(tb, 77))
}

// asOperator makes the request method path (under the relay's URL) with
// body (nil: none), with an operator's token of k for that method and
// path (bearer.OperatorPurpose; k nil: no token).
func (h *harness) asOperator(tb testing.TB, method, path string, k *did.PrivateKey, body io.Reader) resp {
	tb.Helper()
	req, _ := http.NewRequest(method, h.srv.URL+path, body)
	if k != nil {
		tok, err := bearer.IssuePurpose(k, h.relay.cfg.PublicURL, bearer.OperatorPurpose(method, req.URL.EscapedPath()), h.clk.Now(), bearer.OperatorTTL)
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("Authorization", bearer.Authorization(tok))
	}
	return h.do(tb, req)
}

// getAs gets path with a token of caller.
func (h *harness) getAs(tb testing.TB, path string, caller *did.PrivateKey) resp {
	tb.Helper()
	req, _ := http.NewRequest("GET", h.srv.URL+path, nil)
	tok, err := bearer.Issue(caller, h.relay.cfg.PublicURL, h.clk.Now(), 0)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", bearer.Authorization(tok))
	return h.do(tb, req)
}

func (h *harness) do(tb testing.TB, req *http.Request) resp {
	tb.Helper()
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	out := resp{status: r.StatusCode, header: r.Header, body: b}
	json.Unmarshal(b, &out.json)
	return out
}

func (h *harness) queued(tb testing.TB, agent did.DID) []queue.Record {
	tb.Helper()
	recs, err := h.q.Next(context.Background(), agent.String(), 0, 1000, h.clk.Now())
	if err != nil {
		tb.Fatal(err)
	}
	return recs
}

// inWindow moves the fake clock to 12:12:00, inside window11.
func (h *harness) inWindow() { h.clk.Set(t0.Add(12 * time.Minute)) }

func bearerIssue(k *did.PrivateKey, aud string, now time.Time) (string, error) {
	return bearer.Issue(k, aud, now, 0)
}
