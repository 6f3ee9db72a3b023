package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

const sendV1 = `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[]}}}`
const sendV03 = `{"jsonrpc":"2.0","id":"a","method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[]}}}`

func TestAsleepAnswerShapes(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{})

	// A JSON-RPC call: the JSON-RPC error response with the profile's
	// members beside it; sleep has no Retry-After.
	r := h.post(t, dev.DID(), alice, "1.0", sendV1)
	if r.status != 503 || r.header.Get("Retry-After") != "" {
		t.Fatalf("status %d, Retry-After %q; want 503 and none", r.status, r.header.Get("Retry-After"))
	}
	want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32003,"message":"asleep, try later","data":{"error":"agent_asleep","queued":true}},"message":"asleep, try later","queued":true}`
	if string(r.body) != want {
		t.Errorf("body\n got %s\nwant %s", r.body, want)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	// v0.3 keeps the string id.
	r = h.post(t, dev.DID(), alice, "", sendV03)
	if r.status != 503 || r.json["id"] != "a" {
		t.Errorf("v0.3: status %d, id %v", r.status, r.json["id"])
	}
	// A notification (no id): the profile's body exactly.
	note := `{"jsonrpc":"2.0","method":"SendMessage","params":{"message":{"parts":[]}}}`
	r = h.post(t, dev.DID(), alice, "1.0", note)
	if want := `{"error":"agent_asleep","message":"asleep, try later","queued":true}`; r.status != 503 || string(r.body) != want {
		t.Errorf("notification: %d %s, want 503 %s", r.status, r.body, want)
	}
	// Not JSON-RPC: a Torpor device never takes it; refused with its
	// error and id null, not stored.
	r = h.post(t, dev.DID(), alice, "", "one")
	if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`; r.status != 200 || string(r.body) != want {
		t.Errorf("opaque body: %d %s, want 200 %s", r.status, r.body, want)
	}
	if m := string(h.get(t, "/metrics").body); !strings.Contains(m, `torpor_relay_enqueues_total{outcome="invalid"} 1`) {
		t.Error("/metrics does not count the invalid body")
	}
	recs := h.queued(t, dev.DID())
	if len(recs) != 3 {
		t.Fatalf("%d records queued, want 3", len(recs))
	}
	for i, body := range []string{sendV1, sendV03, note} {
		if recs[i].From != alice.DID().String() || string(recs[i].Body) != body || recs[i].Kind != queue.KindMessage {
			t.Errorf("record %d = from %s kind %v body %s", i, recs[i].From, recs[i].Kind, recs[i].Body)
		}
	}
}

func TestHourlyWake(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	c := h.device(t, dev, "hourly_wake", deviceOpts{handler: func(ctx context.Context, req wire.Request) wire.Response {
		return wire.Response{Status: 200, ContentType: "application/json", Body: fmt.Appendf(nil, `{"jsonrpc":"2.0","id":7,"result":{"from":%q,"ver":%q}}`, req.From, req.Version)}
	}})
	// 12:00, window 12:11-12:16, link up: queued, Retry-After into the window.
	r := h.post(t, dev.DID(), alice, "1.0", sendV1)
	ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 503 || ra < 660 || ra >= 960 {
		t.Fatalf("outside the window: status %d Retry-After %d; want 503 and 660 <= n < 960", r.status, ra)
	}
	if got := r.json["retryAfterSec"]; got != float64(ra) {
		t.Errorf("retryAfterSec %v != Retry-After %d", got, ra)
	}
	if d := r.json["error"].(map[string]any)["data"].(map[string]any); d["retryAfterSec"] != float64(ra) || d["queued"] != true {
		t.Errorf("error.data = %v", d)
	}
	// The link was up: the device is told at once.
	select {
	case <-c.Queued():
	case <-time.After(5 * time.Second):
		t.Error("no queued notification on the link")
	}
	// Inside the window: live.
	h.inWindow()
	r = h.post(t, dev.DID(), alice, "1.0", sendV1)
	want := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"result":{"from":%q,"ver":"1.0"}}`, alice.DID())
	if r.status != 200 || string(r.body) != want {
		t.Errorf("inside the window: %d %s, want 200 %s", r.status, r.body, want)
	}
	if n := len(h.queued(t, dev.DID())); n != 1 {
		t.Errorf("%d records queued, want 1 (the live one is not)", n)
	}
	// Inside the window with the link down: queued, Retry-After within
	// what is left of this window.
	c.Close()
	<-h.relay.Link().Gone(dev.DID().String()) // the relay notices the close asynchronously
	r = h.post(t, dev.DID(), alice, "", sendV03)
	ra, _ = strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 503 || ra < 1 || ra >= 240 {
		t.Errorf("in window, link down: %d Retry-After %d, want 503 within the window's 240 s left", r.status, ra)
	}
}

func TestSessionNeverQueues(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	c := h.device(t, dev, "session", deviceOpts{handler: func(ctx context.Context, req wire.Request) wire.Response {
		return wire.Response{Status: 200, Body: []byte(`{"ok":true}`)}
	}})
	if r := h.post(t, dev.DID(), alice, "1.0", sendV1); r.status != 200 {
		t.Errorf("session, link up: status %d, want 200", r.status)
	}
	c.Close()
	<-h.relay.Link().Gone(dev.DID().String()) // the relay notices the close asynchronously
	r := h.post(t, dev.DID(), alice, "1.0", sendV1)
	if r.status != 503 || r.json["queued"] != false || r.header.Get("Retry-After") != "" {
		t.Errorf("session, link down: %d %s, want 503 queued false", r.status, r.body)
	}
	if n := len(h.queued(t, dev.DID())); n != 0 {
		t.Errorf("session queued %d records", n)
	}
}

func TestAlwaysOnOfflineQueues(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "always_on", deviceOpts{})
	r := h.post(t, dev.DID(), alice, "1.0", sendV1)
	if r.status != 503 || r.json["queued"] != true || r.header.Get("Retry-After") != "" {
		t.Errorf("always_on, link down: %d %s", r.status, r.body)
	}
}

func TestAuthentication(t *testing.T) {
	h := newHarness(t, nil)
	sleeper, awake, alice := didtest.Key(t, 1), didtest.Key(t, 3), didtest.Key(t, 2)
	h.publishOffline(t, sleeper, "sleep", deviceOpts{})
	h.device(t, awake, "always_on", deviceOpts{handler: func(context.Context, wire.Request) wire.Response { return wire.Response{Status: 200} }})

	r := h.post(t, sleeper.DID(), nil, "", `{"jsonrpc":"2.0","params":{"message":{"issuerDid":"did:key:z6Mkforged"}}}`)
	want := `{"error":"asleep_enqueue_requires_auth","message":"DID Bearer token refused (missing bearer token): every request needs a valid token; store-and-forward requires verified transport caller DID","queued":false,"tokenError":"missing bearer token"}`
	if r.status != 401 || string(r.body) != want {
		t.Errorf("asleep, no token: %d %s", r.status, r.body)
	}
	if wa := r.header.Get("WWW-Authenticate"); wa != `Bearer realm="atom", error="invalid_token", error_description="missing bearer token"` {
		t.Errorf("WWW-Authenticate = %q", wa)
	}
	// Before authentication every agent answers alike, so that nobody
	// learns which agents the relay serves.
	for _, agent := range []did.DID{awake.DID(), didtest.Key(t, 9).DID()} {
		if r2 := h.post(t, agent, nil, "1.0", sendV1); r2.status != r.status || string(r2.body) != string(r.body) || r2.header.Get("WWW-Authenticate") != r.header.Get("WWW-Authenticate") {
			t.Errorf("%s, no token: %d %s, want the sleeper's answer", agent, r2.status, r2.body)
		}
	}
	// A token for another audience.
	tok, _ := issueToken(alice, "https://elsewhere.example", h)
	req, _ := http.NewRequest("POST", h.srv.URL+"/a/"+sleeper.DID().String()+"/a2a/jsonrpc", strings.NewReader(sendV1))
	req.Header.Set("Authorization", "Bearer "+tok)
	r = h.do(t, req)
	if r.status != 401 || r.json["error"] != "asleep_enqueue_requires_auth" {
		t.Errorf("wrong audience: %d %s", r.status, r.body)
	}
	// An expired token, to the awake agent: the body says why, as the
	// header does.
	tok, _ = bearerIssue(alice, h.relay.cfg.PublicURL, h.clk.Now().Add(-time.Hour))
	req, _ = http.NewRequest("POST", h.srv.URL+"/a/"+awake.DID().String()+"/a2a/jsonrpc", strings.NewReader(sendV1))
	req.Header.Set("Authorization", "Bearer "+tok)
	r = h.do(t, req)
	if te, _ := r.json["tokenError"].(string); r.status != 401 || !strings.Contains(te, "expired") ||
		!strings.Contains(r.json["message"].(string), te) || !strings.Contains(r.header.Get("WWW-Authenticate"), te) {
		t.Errorf("expired token: %d %s %q, want the reason in tokenError, message and header", r.status, r.body, r.header.Get("WWW-Authenticate"))
	}
	if n := len(h.queued(t, sleeper.DID())); n != 0 {
		t.Errorf("unauthenticated requests queued %d records", n)
	}
}

func TestQueueFull(t *testing.T) {
	tests := []struct {
		name   string
		bounds queuebounds.Bounds
		second *did.PrivateKey // nil: the same sender
		body   string
		status int
		kind   string
	}{
		{"messages", queuebounds.Bounds{MaxMessages: 1}, didtest.Key(t, 4), sendV1, 507, "messages"},
		{"peer", queuebounds.Bounds{MaxPerPeer: 1}, nil, sendV1, 429, "peer"},
		{"bytes", queuebounds.Bounds{MaxBytes: 150}, nil, sendV1, 507, "bytes"},
		{"peer bytes", queuebounds.Bounds{MaxPeerBytes: 150}, nil, sendV1, 429, "peer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
			h.publishOffline(t, dev, "sleep", deviceOpts{bounds: &tt.bounds})
			if r := h.post(t, dev.DID(), alice, "1.0", tt.body); r.status != 503 {
				t.Fatalf("first: %d %s", r.status, r.body)
			}
			second := tt.second
			if second == nil {
				second = alice
			}
			r := h.post(t, dev.DID(), second, "1.0", tt.body)
			if r.status != tt.status {
				t.Fatalf("second: status %d, want %d (%s)", r.status, tt.status, r.body)
			}
			e := r.json["error"].(map[string]any)
			d := e["data"].(map[string]any)
			if e["code"] != float64(CodeQueueFull) || d["error"] != "asleep_queue_full" || d["kind"] != tt.kind || d["queued"] != false || r.json["queued"] != false || r.json["kind"] != tt.kind {
				t.Errorf("second: body %s", r.body)
			}
			if strings.Contains(string(r.body), "agent_asleep") {
				t.Error("queue-full answer mentions agent_asleep")
			}
			// The profile form for a notification (no id).
			r = h.post(t, dev.DID(), second, "1.0", strings.Replace(tt.body, `"id":7,`, "", 1))
			if r.json["error"] != "asleep_queue_full" || r.json["kind"] != tt.kind {
				t.Errorf("notification: %s", r.body)
			}
			if n := len(h.queued(t, dev.DID())); n != 1 {
				t.Errorf("%d records queued, want 1", n)
			}
		})
	}
}

func TestMaxMessageSize(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{bounds: &queuebounds.Bounds{MaxMessageSize: 1024}})
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`
	// With a Content-Length, and chunked (the limit applies while reading).
	if r := h.post(t, dev.DID(), alice, "1.0", big); r.status != 413 || r.json["error"] != "message_too_large" || r.json["maxMessageBytes"] != float64(1024) {
		t.Errorf("Content-Length: %d %s", r.status, r.body)
	}
	tok, _ := issueToken(alice, h.relay.cfg.PublicURL, h)
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < 100; i++ {
			if _, err := pw.Write(bytes.Repeat([]byte("y"), 512)); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", h.srv.URL+"/a/"+dev.DID().String()+"/a2a/jsonrpc", pr)
	req.Header.Set("Authorization", "Bearer "+tok)
	r := h.do(t, req)
	pr.CloseWithError(io.ErrClosedPipe)
	if r.status != 413 {
		t.Errorf("chunked: %d %s", r.status, r.body)
	}
	if n := len(h.queued(t, dev.DID())); n != 0 {
		t.Errorf("%d records queued", n)
	}
}

func TestHandshakeUsesReserve(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{bounds: &queuebounds.Bounds{MaxMessages: 1}})
	if r := h.post(t, dev.DID(), alice, "1.0", sendV1); r.status != 503 {
		t.Fatal(r.status)
	}
	if r := h.post(t, dev.DID(), alice, "1.0", sendV1); r.status != 507 {
		t.Fatalf("full queue took a message: %d", r.status)
	}
	hs := `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"parts":[{"data":{"mediaType":"application/vnd.atom.mls-handshake+json;version=1","initiatorDid":"x","welcome":"AAE="},"mediaType":"application/vnd.atom.mls-handshake+json;version=1"}]}}}`
	if r := h.post(t, dev.DID(), alice, "1.0", hs); r.status != 503 || r.json["queued"] != true {
		t.Fatalf("handshake into a full queue: %d %s", r.status, r.body)
	}
	recs := h.queued(t, dev.DID())
	if len(recs) != 2 || recs[1].Kind != queue.KindHandshake {
		t.Errorf("records: %d, last kind %v", len(recs), recs[len(recs)-1].Kind)
	}
}

func TestMethodsWhileAsleep(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "hourly_wake", deviceOpts{})
	tests := []struct {
		name, version, body string
		status              int
		code                float64
		queued              bool
	}{
		{"v0.3 method under 1.0", "1.0", sendV03, 400, -32601, false},
		{"v1.0 method without header", "", sendV1, 400, -32601, false},
		{"GetTask", "1.0", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"t"}}`, 503, -32003, false},
		{"unknown version", "2.0", sendV1, 400, -32009, false},
		{"stream", "1.0", `{"jsonrpc":"2.0","id":4,"method":"SendStreamingMessage","params":{}}`, 503, -32003, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.post(t, dev.DID(), alice, tt.version, tt.body)
			if r.status != tt.status || r.json["queued"] != tt.queued {
				t.Errorf("%d %s, want %d queued %v", r.status, r.body, tt.status, tt.queued)
			}
			if e, ok := r.json["error"].(map[string]any); ok && e["code"] != tt.code {
				t.Errorf("code %v, want %v", e["code"], tt.code)
			}
		})
	}
	if n := len(h.queued(t, dev.DID())); n != 1 {
		t.Errorf("%d records queued, want 1", n)
	}
}

func TestCardAndPulse(t *testing.T) {
	h := newHarness(t, nil)
	dev, mallory := didtest.Key(t, 1), didtest.Key(t, 9)
	c := h.device(t, dev, "sleep", deviceOpts{pulse: []byte(`{"pulse":1}`)})
	r := h.getCard(t, "/a/"+dev.DID().String()+"/.well-known/agent-card.json", "1.0")
	if r.status != 200 {
		t.Fatalf("card: %d %s", r.status, r.body)
	}
	if err := a2a.VerifyCard(r.body, dev.DID()); err != nil {
		t.Errorf("served card does not verify: %v", err)
	}
	st, _ := h.states.Get(context.Background(), dev.DID().String())
	if !bytes.Equal(r.body, st.Card) {
		t.Error("served card differs from the uploaded bytes")
	}
	card, _ := a2a.ParseCard(r.body)
	if card.OfflineMode() != "sleep" || card.SupportedInterfaces[0].URL != h.srv.URL+"/a/"+dev.DID().String()+"/a2a/jsonrpc" {
		t.Errorf("card: mode %q, interface %+v", card.OfflineMode(), card.SupportedInterfaces[0])
	}
	if r := h.get(t, "/a/"+dev.DID().String()+"/pulse"); r.status != 200 || string(r.body) != `{"pulse":1}` {
		t.Errorf("pulse: %d %s", r.status, r.body)
	}

	for _, tt := range badStates(mallory) {
		t.Run(tt.name, func(t *testing.T) {
			st := wire.State{Mode: tt.mode, Window: window11}
			if tt.mode != "nap" {
				st = h.state(t, dev, c.Hello(), tt.mode, tt.o)
			}
			_, err := c.Publish(context.Background(), st)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Publish = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// Nothing of the refused states was stored.
	if r := h.getCard(t, "/a/"+dev.DID().String()+"/.well-known/agent-card.json", "1.0"); !bytes.Equal(r.body, st.Card) {
		t.Error("a refused state changed the card")
	}
	if r := h.get(t, "/a/"+didtest.Key(t, 5).DID().String()+"/.well-known/agent-card.json"); r.status != 404 {
		t.Errorf("unknown agent's card: %d", r.status)
	}
	if r := h.get(t, "/a/not-a-did/.well-known/agent-card.json"); r.status != 404 {
		t.Errorf("bad DID: %d", r.status)
	}
}

// badState is a state a device publishes that the relay must refuse with
// an error containing want.
type badState struct {
	name string
	mode string
	o    deviceOpts
	want string
}

// badStates are TestCardAndPulse's refused states; mallory signs a card
// that is not hers.
func badStates(mallory *did.PrivateKey) []badState {
	return []badState{
		{"signed by another key", "sleep", deviceOpts{signer: mallory}, "not signed by the agent"},
		{"wrong offline mode", "hourly_wake", deviceOpts{card: func(c *a2a.Card) { c.Capabilities.Extensions = c.Capabilities.Extensions[:1] }}, "offline-delivery mode"},
		{"bounds misstated", "sleep", deviceOpts{card: func(c *a2a.Card) {
			c.Capabilities.Extensions[2].Params = json.RawMessage(`{"maxMessages":9999,"maxTotalBytes":1,"maxPendingPerPeer":1,"ttlSeconds":1,"maxMessageBytes":1,"handshakeReserveMessages":1,"handshakeReserveBytes":1}`)
		}}, "queue bounds"},
		{"malformed envelope entry", "sleep", deviceOpts{card: func(c *a2a.Card) {
			c.Capabilities.Extensions = append(c.Capabilities.Extensions, a2a.Extension{URI: a2a.ExtEnvelope, Description: "d",
				Params: json.RawMessage(`{"scope":"lap-scope-v0","proofs":[],"algorithms":["EdDSA"],"maxChain":8}`)})
		}}, "proofs is empty"},
		{"unknown mode", "nap", deviceOpts{}, "unknown"},
		{"not a key package", "sleep", deviceOpts{kps: [][]byte{[]byte("garbage!")}}, "key package"},
	}
}

// kp returns a fake MLSMessage-wrapped KeyPackage header plus tag.
func kp(tag byte) []byte { return []byte{0, 1, 0, 5, 0, 1, 0, 1, tag} }

func TestKeyPackagesHandedOutOnce(t *testing.T) {
	h := newHarness(t, nil)
	dev := didtest.Key(t, 1)
	h.publishOffline(t, dev, "sleep", deviceOpts{kps: [][]byte{kp(1), kp(2)}})
	path := "/a/" + dev.DID().String() + "/mls/key-package"
	var got []string
	for range 2 {
		r := h.getKP(t, path)
		if r.status != 200 || r.json["did"] != dev.DID().String() {
			t.Fatalf("key package: %d %s", r.status, r.body)
		}
		got = append(got, r.json["wire"].(string))
	}
	want := []string{"AAEABQABAAEB", "AAEABQABAAEC"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wires (-want +got):\n%s", diff)
	}
	r := h.getKP(t, path)
	if r.status != 503 || r.json["error"] != "no_key_package" {
		t.Errorf("empty pool: %d %s", r.status, r.body)
	}
	// Durable: reopening the state file does not bring them back.
	h.states.Close()
	s2, err := agents.OpenBolt(h.dir+"/agents.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, _, err := s2.TakeKeyPackage(context.Background(), dev.DID().String()); err != agents.ErrNoKeyPackage {
		t.Errorf("after reopen: TakeKeyPackage = %v, want agents.ErrNoKeyPackage", err)
	}
}

// TestStateOKNamesHeldKeyPackages: the answer to a published state names
// the KeyPackages the relay holds, so that the device learns which were
// handed out; when they are those the link's last answer named and the
// state published none, it leaves them out (the device knows), and a new
// link is told again.
func TestStateOKNamesHeldKeyPackages(t *testing.T) {
	h := newHarness(t, nil)
	dev := didtest.Key(t, 1)
	c := h.dial(t, dev)
	publish := func(c *link.Client, o deviceOpts) *wire.Held {
		t.Helper()
		ok, err := c.Publish(context.Background(), h.state(t, dev, c.Hello(), "always_on", o))
		if err != nil {
			t.Fatalf("Publish = %+v, %v", ok, err)
		}
		return ok.Held
	}
	sorted := func(ds ...[]byte) [][]byte { return slices.SortedFunc(slices.Values(ds), bytes.Compare) }
	held := publish(c, deviceOpts{kps: [][]byte{kp(1), kp(2)}})
	if held == nil || !cmp.Equal(sorted(held.Digests...), sorted(wire.KeyPackageDigest(kp(1)), wire.KeyPackageDigest(kp(2)))) {
		t.Errorf("held %+v, want kp(1) and kp(2)", held)
	}
	if held := publish(c, deviceOpts{}); held != nil {
		t.Errorf("nothing handed out since: held %x, want it left out", held.Digests)
	}
	if r := h.getKP(t, "/a/"+dev.DID().String()+"/mls/key-package"); r.status != 200 {
		t.Fatalf("key package: %d %s", r.status, r.body)
	}
	if held := publish(c, deviceOpts{}); held == nil || len(held.Digests) != 1 || !bytes.Equal(held.Digests[0], wire.KeyPackageDigest(kp(2))) {
		t.Errorf("after one was handed out: held %+v, want kp(2)'s digest only", held)
	}
	h.getKP(t, "/a/"+dev.DID().String()+"/mls/key-package")
	if held := publish(c, deviceOpts{}); held == nil || held.Digests == nil || len(held.Digests) != 0 {
		t.Errorf("empty pool: held %+v, want an empty, non-nil list", held)
	}
	if held := publish(h.dial(t, dev), deviceOpts{}); held == nil || held.Digests == nil || len(held.Digests) != 0 {
		t.Errorf("a new link's first state: held %+v, want the empty pool named", held)
	}

	// A device that names the Held it knows (wire.State.HeldDigest) is not
	// told it again on a new link, unless the relay holds other ones.
	c = h.dial(t, dev)
	held = publish(c, deviceOpts{kps: [][]byte{kp(3), kp(4)}})
	knows := func(c *link.Client, d []byte) *wire.Held {
		t.Helper()
		st := h.state(t, dev, c.Hello(), "always_on", deviceOpts{})
		st.HeldDigest = d
		ok, err := c.Publish(context.Background(), st)
		if err != nil {
			t.Fatalf("Publish = %+v, %v", ok, err)
		}
		return ok.Held
	}
	c = h.dial(t, dev)
	if got := knows(c, wire.HeldDigest(held)); got != nil {
		t.Errorf("a new link's state naming the Held it knows: held %+v, want it left out", got)
	}
	if got := knows(h.dial(t, dev), wire.HeldDigest(&wire.Held{Digests: [][]byte{wire.KeyPackageDigest(kp(3))}})); got == nil || len(got.Digests) != 2 {
		t.Errorf("a state naming another Held: held %+v, want kp(3) and kp(4) named", got)
	}
	h.getKP(t, "/a/"+dev.DID().String()+"/mls/key-package")
	if got := knows(h.dial(t, dev), wire.HeldDigest(held)); got == nil || len(got.Digests) != 1 {
		t.Errorf("after one was handed out, a state naming the Held before: held %+v, want the one left named", got)
	}
}

// TestStateOKNamesTheCard: the answer to every published state names the
// card the relay holds by its wire.CardDigest (none before a card), also
// to a state that left the card out and on a new link; a new card is
// named once it replaced the old one. A device sends its card only when
// the relay names another.
func TestStateOKNamesTheCard(t *testing.T) {
	h := newHarness(t, nil)
	dev := didtest.Key(t, 1)
	c := h.dial(t, dev)
	publish := func(c *link.Client, st wire.State) []byte {
		t.Helper()
		ok, err := c.Publish(context.Background(), st)
		if err != nil {
			t.Fatalf("Publish = %+v, %v", ok, err)
		}
		return ok.CardDigest
	}
	noCard := h.state(t, dev, c.Hello(), "always_on", deviceOpts{})
	noCard.Card = nil
	if d := publish(c, noCard); d != nil {
		t.Errorf("no card held: state-ok names card %x", d)
	}
	first := h.state(t, dev, c.Hello(), "always_on", deviceOpts{})
	if d := publish(c, first); !bytes.Equal(d, wire.CardDigest(first.Card)) {
		t.Errorf("state-ok names card %x, want the card published, %x", d, wire.CardDigest(first.Card))
	}
	c = h.dial(t, dev) // a new link replaces the old one
	if d := publish(c, noCard); !bytes.Equal(d, wire.CardDigest(first.Card)) {
		t.Errorf("a new link's state without a card: state-ok names %x, want the card held, %x", d, wire.CardDigest(first.Card))
	}
	other := h.state(t, dev, c.Hello(), "always_on", deviceOpts{card: func(c *a2a.Card) { c.Name = "renamed" }})
	if d := publish(c, other); !bytes.Equal(d, wire.CardDigest(other.Card)) || bytes.Equal(d, wire.CardDigest(first.Card)) {
		t.Errorf("after a new card: state-ok names %x, want %x", d, wire.CardDigest(other.Card))
	}
	if r := h.getCard(t, "/a/"+dev.DID().String()+a2a.CardPath, "1.0"); r.status != 200 || !bytes.Equal(wire.CardDigest(r.body), wire.CardDigest(other.Card)) {
		t.Errorf("served card: %d, not the one the state-ok named", r.status)
	}
}

// TestKeyPackageRateLimit: a fetch needs a DID Bearer token; each caller
// DID has its own bucket.
func TestKeyPackageRateLimit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.KeyPackageRate = 2 })
	dev, alice, bob := didtest.Key(t, 1), didtest.Key(t, 2), didtest.Key(t, 3)
	h.publishOffline(t, dev, "sleep", deviceOpts{kps: [][]byte{kp(1), kp(2), kp(3), kp(4), kp(5)}})
	path := "/a/" + dev.DID().String() + "/mls/key-package"
	if r := h.get(t, path); r.status != 401 || r.header.Get("WWW-Authenticate") == "" {
		t.Errorf("fetch without a token: %d %s, want 401 with a challenge", r.status, r.body)
	}
	for i, want := range []int{200, 200, 429} {
		if r := h.getAs(t, path, alice); r.status != want {
			t.Errorf("alice's fetch %d: %d, want %d", i, r.status, want)
		}
	}
	if r := h.getAs(t, path, bob); r.status != 200 {
		t.Errorf("bob, another DID: %d, want 200 (his own bucket)", r.status)
	}
	r := h.getAs(t, path, alice)
	if r.status != 429 || r.header.Get("Retry-After") == "" || r.json["error"] != "rate_limited" {
		t.Errorf("alice still limited: %d %s, Retry-After %q", r.status, r.body, r.header.Get("Retry-After"))
	}
	h.clk.Advance(30 * time.Second) // one token back at 2 per minute
	if r := h.getAs(t, path, alice); r.status != 200 {
		t.Errorf("after 30 s: %d", r.status)
	}
}

func TestDrainAfterWake(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	for i := range 3 {
		if r := h.post(t, dev.DID(), alice, "1.0", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{}}`, i)); r.status != 503 {
			t.Fatal(r.status)
		}
	}
	h.clk.Advance(time.Hour)
	c := h.device(t, dev, "sleep", deviceOpts{})
	var bodies []string
	n, err := c.Drain(context.Background(), 2, func(ctx context.Context, recs []wire.Record) error {
		for _, r := range recs {
			bodies = append(bodies, string(r.Body))
		}
		return nil
	})
	if err != nil || n != 3 || strings.Join(bodies, ",") != `{"jsonrpc":"2.0","id":0,"method":"SendMessage","params":{}},{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}},{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{}}` {
		t.Errorf("Drain = %d %v %v", n, err, bodies)
	}
	m := h.get(t, "/metrics")
	for _, want := range []string{
		`torpor_relay_enqueues_total{outcome="queued"} 3`,
		`torpor_relay_queue_messages 0`,
		`torpor_relay_drain_latency_seconds_count 3`,
		`torpor_relay_answers_total{route="POST /a/{did}/a2a/jsonrpc",status="503"} 3`,
		`torpor_relay_links 1`,
	} {
		if !strings.Contains(string(m.body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(m.body), "torpor_relay_agent_") {
		t.Error("per-agent series without the option")
	}
}

func TestPerAgentMetrics(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Ops.PerAgentMetrics = true })
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	h.post(t, dev.DID(), alice, "1.0", sendV1)
	m := string(h.get(t, "/metrics").body)
	for _, want := range []string{
		fmt.Sprintf(`torpor_relay_agent_queue_messages{agent=%q,name="dev"} 1`, dev.DID()),
		fmt.Sprintf(`torpor_relay_agent_enqueues_total{agent=%q,outcome="queued"} 1`, dev.DID()),
		fmt.Sprintf(`torpor_relay_queue_bytes %d`, len(sendV1)),
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestAllowList(t *testing.T) {
	dev, other := didtest.Key(t, 1), didtest.Key(t, 2)
	h := newHarness(t, func(c *Config) { c.Access.AllowAgents = []string{dev.DID().String()} })
	h.device(t, dev, "sleep", deviceOpts{})
	_, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: other, Clock: h.clk})
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("Dial of an agent not on the list = %v, want 403", err)
	}
}

func TestUnknownAgentAndHealth(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Ops.MQTTBroker = "mqtt://127.0.0.1:1883" })
	if r := h.post(t, didtest.Key(t, 1).DID(), didtest.Key(t, 2), "1.0", sendV1); r.status != 404 || r.json["error"] != "unknown_agent" {
		t.Errorf("unknown agent: %d %s", r.status, r.body)
	}
	if r := h.get(t, "/healthz"); r.status != 200 || r.json["mqttBroker"] != "mqtt://127.0.0.1:1883" {
		t.Errorf("healthz: %d %s", r.status, r.body)
	}
	if r := h.get(t, "/a/"+didtest.Key(t, 1).DID().String()+"/a2a/jsonrpc"); r.status != 405 {
		t.Errorf("GET jsonrpc: %d", r.status)
	}
}

func TestStateSurvivesRestart(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "hourly_wake", deviceOpts{window: &wire.Window{Minute: 30, LengthSec: 120}})
	// A second relay on the same files (the first one's files stay open
	// read-only in bbolt's sense; reopen after closing).
	h.relay.Link().Close()
	h.states.Close()
	states, err := agents.OpenBolt(h.dir+"/agents.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.states = states
	r2, err := New(Config{PublicURL: h.relay.cfg.PublicURL, Stores: Stores{Queue: h.q, States: states}, Clock: h.clk, Rand: bytes.NewReader(nil), KeyPackages: opaqueKeyPackages{}})
	if err != nil {
		t.Fatal(err)
	}
	h.relay = r2
	h.srv.Config.Handler = r2.Handler()
	r := h.post(t, dev.DID(), alice, "1.0", sendV1)
	ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 503 || ra != 1800 {
		t.Errorf("after restart: %d Retry-After %d, want 503 1800 (12:00 → 12:30 window)", r.status, ra)
	}
}

func issueToken(k *did.PrivateKey, aud string, h *harness) (string, error) {
	return bearerIssue(k, aud, h.clk.Now())
}

func TestSleepRetryAfterOnlyForScheduledWake(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	c := h.device(t, dev, "sleep", deviceOpts{})
	st := h.state(t, dev, c.Hello(), "sleep", deviceOpts{})
	st.NextWake = t0.Add(2 * time.Hour).Unix()
	if _, err := c.Publish(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	r := h.post(t, dev.DID(), alice, "1.0", sendV1)
	ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 503 || ra < 7200 || ra >= 7200+300 {
		t.Errorf("scheduled wake in 2 h: %d Retry-After %d, want 503 and 7200 <= n < 7500", r.status, ra)
	}
	// Once the scheduled wake has passed, sleep has no Retry-After again.
	h.clk.Advance(3 * time.Hour)
	if r := h.post(t, dev.DID(), alice, "1.0", sendV1); r.status != 503 || r.header.Get("Retry-After") != "" {
		t.Errorf("after the wake: %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
}

func TestAgentBoundsOverride(t *testing.T) {
	dev, other, alice := didtest.Key(t, 1), didtest.Key(t, 3), didtest.Key(t, 2)
	small := queuebounds.Default()
	small.MaxMessages = 1
	h := newHarness(t, func(c *Config) { c.Limits.AgentBounds = map[string]queuebounds.Bounds{dev.DID().String(): small} })
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	h.publishOffline(t, other, "sleep", deviceOpts{})
	for i, want := range []int{503, 507} {
		if r := h.post(t, dev.DID(), alice, "1.0", sendV1); r.status != want {
			t.Errorf("agent with 1-message bound, request %d: %d, want %d", i, r.status, want)
		}
	}
	for i := range 2 {
		if r := h.post(t, other.DID(), alice, "1.0", sendV1); r.status != 503 {
			t.Errorf("other agent, request %d: %d", i, r.status)
		}
	}
	card, _ := a2a.ParseCard(h.getCard(t, "/a/"+dev.DID().String()+"/.well-known/agent-card.json", "1.0").body)
	if qb, _, _ := card.QueueBounds(); qb.MaxMessages != 1 {
		t.Errorf("card publishes maxMessages %d, want 1", qb.MaxMessages)
	}
}

// TestBoundsOfStateWithoutPeerBytes: a state stored before the per-peer
// byte bound existed keeps its other bounds and gets the ceiling's.
func TestBoundsOfStateWithoutPeerBytes(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Access.AdmitAll = true }) // no probation's lower ceiling
	st := agents.State{Bounds: queuebounds.Default()}
	st.Bounds.MaxMessages, st.Bounds.MaxPeerBytes = 7, 0
	b := h.relay.bounds(didtest.Key(t, 1).DID().String(), st)
	if b.MaxMessages != 7 || b.MaxPeerBytes != queuebounds.Default().MaxPeerBytes {
		t.Errorf("bounds = %+v, want 7 messages and the ceiling's %d peer bytes", b, queuebounds.Default().MaxPeerBytes)
	}
}

func TestRunPurgesExpired(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{bounds: &queuebounds.Bounds{TTL: time.Minute}})
	h.post(t, dev.DID(), alice, "1.0", sendV1)
	h.clk.Advance(2 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := h.clk.TimerCreated()
	go h.relay.Run(ctx)
	<-waiting // the first purge ran; Run sleeps until the next
	if m := string(h.get(t, "/metrics").body); !strings.Contains(m, "torpor_relay_purged_total 1") {
		t.Error("/metrics lacks torpor_relay_purged_total 1")
	}
	if recs := h.queued(t, dev.DID()); len(recs) != 0 {
		t.Errorf("%d records after the purge", len(recs))
	}
}

// TestHourlyRetryAfterFollowsAnnouncedWake: inside its window but with the
// link down, an hourly_wake device that announced its next wake (it left
// the window early, or its clock runs ahead) sends senders to the window
// of that wake, not to the rest of the one it has left.
func TestHourlyRetryAfterFollowsAnnouncedWake(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	win := deviceOpts{window: &wire.Window{Minute: 30, LengthSec: 120}}
	c := h.device(t, dev, "hourly_wake", win)
	st := h.state(t, dev, c.Hello(), "hourly_wake", win)
	st.NextWake = t0.Add(90 * time.Minute).Unix() // 13:30, the next hour's window
	if _, err := c.Publish(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	c.Close()
	<-h.relay.Link().Gone(dev.DID().String())          // the relay notices the close asynchronously
	h.clk.Set(t0.Add(30*time.Minute + 30*time.Second)) // 12:30:30, inside this hour's window
	r := h.post(t, dev.DID(), alice, "1.0", sendV1)
	ra, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 503 || ra < 3570 || ra >= 3570+120 {
		t.Errorf("link down inside the window, next wake announced for 13:30: %d Retry-After %d, want 503 and 3570 <= n < 3690", r.status, ra)
	}
	// Without an announced wake the rest of the open window is the answer.
	c = h.device(t, dev, "hourly_wake", win)
	c.Close()
	<-h.relay.Link().Gone(dev.DID().String()) // the relay notices the close asynchronously
	r = h.post(t, dev.DID(), alice, "1.0", sendV1)
	if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); r.status != 503 || ra < 1 || ra >= 90 {
		t.Errorf("no announced wake: %d Retry-After %d, want 503 and 1 <= n < 90", r.status, ra)
	}
}

// TestCardVersions: the card URL serves the signed card to an A2A 1.0
// client and its 0.3 view (a2a.CardV03 of the signed bytes, unsigned) to a
// 0.3 client and to one that names no version (A2A 1.0, Section 3.6.2), as
// a2a-go's resolver does; before, every client got the 1.0 card, which
// a2a-go cannot read.
func TestCardVersions(t *testing.T) {
	h := newHarness(t, nil)
	dev := didtest.Key(t, 1)
	h.device(t, dev, "sleep", deviceOpts{})
	st, _ := h.states.Get(context.Background(), dev.DID().String())
	v03, err := a2a.CardV03(st.Card)
	if err != nil {
		t.Fatal(err)
	}
	path := "/a/" + dev.DID().String() + a2a.CardPath
	for version, want := range map[string][]byte{"1.0": st.Card, "1": st.Card, "": v03, "0.3": v03} {
		r := h.getCard(t, path, version)
		if r.status != 200 || !bytes.Equal(r.body, want) {
			t.Errorf("A2A-Version %q: %d %s", version, r.status, r.body)
		}
		if !slices.Contains(r.header.Values("Vary"), "A2A-Version") {
			t.Errorf("A2A-Version %q: Vary %q", version, r.header.Values("Vary"))
		}
	}
	var m map[string]any
	json.Unmarshal(h.getCard(t, path, "").body, &m)
	if m["url"] != h.srv.URL+path[:len(path)-len(a2a.CardPath)]+a2a.JSONRPCPath {
		t.Errorf("0.3 view url = %v", m["url"])
	}
	if r := h.getCard(t, "/a/"+didtest.Key(t, 5).DID().String()+a2a.CardPath, ""); r.status != 404 {
		t.Errorf("unknown agent's 0.3 card: %d", r.status)
	}
}
