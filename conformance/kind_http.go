package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/session/kpcheck"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

func init() { Register("asleep-http-response", runAsleepHTTP) }

// deviceConfig is a vector's "config" member: the device's wake mode and
// wake seed, and whether it is always on whatever its mode (as the
// reference's community hosts are).
type deviceConfig struct {
	Mode          string `json:"mode"`
	WakeSeed      string `json:"wakeSeed"`
	ForceAlwaysOn bool   `json:"forceAlwaysOn"`
}

// httpVector is an asleep-http-response vector.
type httpVector struct {
	Config    deviceConfig `json:"config"`
	Now       time.Time    `json:"now"`
	QueueCaps struct {
		MaxMessages       int   `json:"maxMessages"`
		MaxTotalBytes     int64 `json:"maxTotalBytes"`
		MaxPendingPerPeer int   `json:"maxPendingPerPeer"`
	} `json:"queueCaps"`
	Request  *httpRequest               `json:"request"`
	Requests []httpRequest              `json:"requests"`
	Expect   map[string]json.RawMessage `json:"expect"`
}

type httpRequest struct {
	Method        string `json:"method"`
	Body          string `json:"body"`
	AtomCallerDid string `json:"atomCallerDid"`
}

// runAsleepHTTP runs an asleep-http-response vector through the real relay:
// transport/relay's handler on a loopback HTTP server, its bbolt queue and
// state files under the vector's temporary directory, and an in-process
// device linked over the real WebSocket link that publishes the vector's
// mode, a window at the wake minute of wakeSeed, and a signed card, and
// answers live requests 200 (the "pass-through" of the reference's
// middleware). The vector's atomCallerDid becomes a DID Bearer token signed
// with that identity's key (the vectors' Alice, whose seed INDEX.md gives);
// a request without one is sent without a token. A GET is sent to the
// agent's card: the JSON-RPC endpoint takes only POST, and no GET is gated
// by reachability. Expected and got print as the vector's expect members,
// "name=value" sorted by name; fromDid is the sender of the record the
// request enqueued.
func runAsleepHTTP(v *Vector) Result {
	var in httpVector
	if err := v.Decode(&in); err != nil {
		return Broken(err)
	}
	dir, err := v.TempDir()
	if err != nil {
		return Broken(err)
	}
	mode := in.Config.Mode
	if in.Config.ForceAlwaysOn {
		mode = string(wake.AlwaysOn)
	}
	b := queuebounds.Default()
	if c := in.QueueCaps; c.MaxMessages > 0 || c.MaxTotalBytes > 0 || c.MaxPendingPerPeer > 0 {
		if c.MaxMessages > 0 {
			b.MaxMessages = c.MaxMessages
		}
		if c.MaxTotalBytes > 0 {
			b.MaxBytes = c.MaxTotalBytes
		}
		if c.MaxPendingPerPeer > 0 {
			b.MaxPerPeer = c.MaxPendingPerPeer
		}
	}
	b.MaxPeerBytes = b.MaxBytes // the reference has no per-peer byte cap
	h, err := startRelay(dir, in.Now, b)
	if err != nil {
		return Result{Status: Fail, Got: "error", Note: err.Error()}
	}
	defer h.close()
	if err := h.linkDevice(mode, in.Config.WakeSeed); err != nil {
		return Result{Status: Fail, Got: "error", Note: err.Error()}
	}
	if in.Request != nil {
		got, err := h.do(*in.Request, in.Expect)
		if err != nil {
			return Result{Status: Fail, Got: "error", Note: err.Error()}
		}
		return Compare(expectFields(in.Expect), got)
	}
	var exp, got []string
	for i, r := range in.Requests {
		name := []string{"first", "second", "third"}[min(i, 2)]
		var e map[string]json.RawMessage
		if raw, ok := in.Expect[name]; ok {
			if err := json.Unmarshal(raw, &e); err != nil {
				return Broken(err)
			}
		}
		g, err := h.do(r, e)
		if err != nil {
			return Result{Status: Fail, Got: "error", Note: err.Error()}
		}
		exp = append(exp, name+":"+expectFields(e))
		got = append(got, name+":"+g)
	}
	return Compare(strings.Join(exp, " "), strings.Join(got, " "))
}

// relayHarness is a relay on loopback with one agent whose device is
// linked in-process.
type relayHarness struct {
	relay  *relay.Relay
	srv    *httptest.Server
	q      queue.Store
	states agents.Store
	clk    *clocktest.Clock
	agent  *did.PrivateKey
	dev    *link.Client
	live   atomic.Int64 // requests the device answered
}

// conformanceAgent is the key of the agent the vectors address (they name
// none; the relay serves many).
func conformanceAgent() *did.PrivateKey {
	seed := make([]byte, 32)
	seed[31] = 0x03
	k, _ := did.NewKeyFromSeed(seed)
	return k
}

func startRelay(dir string, now time.Time, b queuebounds.Bounds) (*relayHarness, error) {
	h := &relayHarness{clk: clocktest.New(now), agent: conformanceAgent()}
	var err error
	if h.q, err = openQueue(filepath.Join(dir, "queue.db")); err != nil {
		return nil, err
	}
	if h.states, err = openAgents(filepath.Join(dir, "agents.db")); err != nil {
		h.q.Close()
		return nil, err
	}
	h.srv = httptest.NewUnstartedServer(nil)
	h.relay, err = relay.New(relay.Config{PublicURL: "http://" + h.srv.Listener.Addr().String(), Stores: relay.Stores{Queue: h.q, States: h.states}, Limits: relay.Limits{Bounds: b}, Clock: h.clk, KeyPackages: kpcheck.Verifier{},
		// The vectors' agent is the profile's generic one, which takes
		// any body ("one", "{}"), and the reference knows no probation; a
		// Torpor device takes only A2A requests.
		Access: relay.Access{StoreOpaque: true, AdmitAll: true}})
	if err != nil {
		h.srv.Close()
		h.close()
		return nil, err
	}
	h.srv.Config.Handler = h.relay.Handler()
	h.srv.Start()
	return h, nil
}

func (h *relayHarness) close() {
	if h.dev != nil {
		h.dev.Close()
	}
	if h.relay != nil {
		h.relay.Link().Close()
	}
	if h.srv != nil {
		h.srv.Close()
	}
	h.q.Close()
	h.states.Close()
}

// linkDevice links the agent's device, which publishes mode, the window of
// wakeSeed and a signed card, and stays linked to answer live requests.
func (h *relayHarness) linkDevice(mode, wakeSeed string) error {
	c, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: h.agent, Clock: h.clk, Handler: func(ctx context.Context, req wire.Request) wire.Response {
		h.live.Add(1)
		return wire.Response{Status: http.StatusOK, ContentType: "application/json", Body: []byte(`{"jsonrpc":"2.0","id":null,"result":{}}`)}
	}})
	if err != nil {
		return err
	}
	h.dev = c
	card, err := h.card(mode, "conformance agent", "")
	if err != nil {
		return err
	}
	st := wire.State{Mode: mode, Card: card, Window: &wire.Window{Minute: wake.WakeMinute(wakeSeed), LengthSec: int64(wake.DefaultLength / time.Second)}}
	_, err = c.Publish(context.Background(), st)
	return err
}

// card builds and signs the agent's card for mode with the bounds the relay
// announced.
func (h *relayHarness) card(mode, name, description string) ([]byte, error) {
	b := h.dev.Hello()
	offline := mode
	if offline != string(wake.Sleep) && offline != string(wake.HourlyWake) {
		offline = ""
	}
	c, err := a2a.BuildCard(a2a.CardOptions{Name: name, Description: description, BaseURL: h.srv.URL + "/a/" + h.agent.DID().String(), OfflineMode: offline, Bounds: &b})
	if err != nil {
		return nil, err
	}
	return a2a.SignCard(c, h.agent)
}

// callerKey returns the private key of a vector identity by its DID: the
// vectors' Alice and Bob (seeds 31×00 then 01 or 02, INDEX.md).
func callerKey(id string) (*did.PrivateKey, error) {
	for _, last := range []byte{1, 2} {
		seed := make([]byte, 32)
		seed[31] = last
		k, err := did.NewKeyFromSeed(seed)
		if err == nil && k.DID().String() == id {
			return k, nil
		}
	}
	return nil, fmt.Errorf("no key for caller %s", id)
}

// do sends one vector request and returns the fields named by expect, as
// "name=value" sorted by name.
func (h *relayHarness) do(r httpRequest, expect map[string]json.RawMessage) (string, error) {
	ctx := context.Background()
	before, err := h.q.Stats(ctx, h.agent.DID().String(), h.clk.Now())
	if err != nil {
		return "", err
	}
	liveBefore := h.live.Load()
	req, err := h.request(r)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	after, err := h.q.Stats(ctx, h.agent.DID().String(), h.clk.Now())
	if err != nil {
		return "", err
	}
	from, err := h.enqueuedFrom(ctx, before.Messages, after.Messages)
	if err != nil {
		return "", err
	}
	var ans map[string]any
	json.Unmarshal(body, &ans)
	got := map[string]string{
		"fromDid":          from,
		"statusCode":       fmt.Sprint(resp.StatusCode),
		"enqueued":         fmt.Sprint(after.Messages > before.Messages),
		"passThrough":      fmt.Sprint(h.live.Load() > liveBefore || (r.Method == http.MethodGet && resp.StatusCode == http.StatusOK)),
		"queued":           fmt.Sprint(ans["queued"]),
		"error":            profileToken(ans),
		"kind":             fmt.Sprint(ans["kind"]),
		"retryAfterHeader": fmt.Sprint(resp.Header.Get("Retry-After") != ""),
	}
	return observed(expect, got, ans), nil
}

// enqueuedFrom returns the sender DID of the record a request enqueued, the
// one the relay's transport authentication proved ("<none>" when it
// enqueued nothing): the reference runner's fromDid.
func (h *relayHarness) enqueuedFrom(ctx context.Context, before, after int) (string, error) {
	if after <= before {
		return "<none>", nil
	}
	recs, err := h.q.Next(ctx, h.agent.DID().String(), 0, after, h.clk.Now())
	if err != nil {
		return "", err
	}
	if len(recs) == 0 {
		return "<none>", nil
	}
	return recs[len(recs)-1].From, nil
}

// request builds the vector's request to the agent: GET fetches its card
// (the A2A 1.0 one),
// anything else posts the body to its JSON-RPC endpoint, with a DID Bearer
// token of the vector's caller when it names one.
func (h *relayHarness) request(r httpRequest) (*http.Request, error) {
	base := h.srv.URL + "/a/" + h.agent.DID().String()
	var req *http.Request
	if r.Method == http.MethodGet {
		req, _ = http.NewRequest(http.MethodGet, base+a2a.CardPath, nil)
		// The signed A2A 1.0 card; without the header the relay serves
		// its 0.3 view (A2A 1.0, Section 3.6.2; docs/a2a.md).
		req.Header.Set("A2A-Version", "1.0")
	} else {
		req, _ = http.NewRequest(r.Method, base+a2a.JSONRPCPath, strings.NewReader(r.Body))
		req.Header.Set("Content-Type", "application/json")
	}
	if r.AtomCallerDid != "" {
		k, err := callerKey(r.AtomCallerDid)
		if err != nil {
			return nil, err
		}
		tok, err := bearer.Issue(k, h.srv.URL, h.clk.Now(), 0)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", bearer.Authorization(tok))
	}
	return req, nil
}

// observed renders the fields the vector expects, as name=value sorted by
// name, from what was observed (got) and the answer's body (ans); for
// retryAfterSecMin it says whether the answer's retryAfterSec reaches it.
func observed(expect map[string]json.RawMessage, got map[string]string, ans map[string]any) string {
	var fields []string
	for name, raw := range expect {
		if name == "retryAfterSecMin" {
			var min float64
			json.Unmarshal(raw, &min)
			if n, ok := ans["retryAfterSec"].(float64); ok && n >= min {
				fields = append(fields, fmt.Sprintf("retryAfterSec>=%v", min))
			} else {
				fields = append(fields, fmt.Sprintf("retryAfterSec=%v", ans["retryAfterSec"]))
			}
			continue
		}
		fields = append(fields, name+"="+got[name])
	}
	sort.Strings(fields)
	return strings.Join(fields, " ")
}

// profileToken returns the profile's error token of an answer: the
// "error" member, or error.data.error in the JSON-RPC form.
func profileToken(ans map[string]any) string {
	switch e := ans["error"].(type) {
	case string:
		return e
	case map[string]any:
		if d, ok := e["data"].(map[string]any); ok {
			return fmt.Sprint(d["error"])
		}
	}
	return "<nil>"
}

// expectFields renders an expect object as "name=value" sorted by name;
// retryAfterSecMin becomes "retryAfterSec>=n".
func expectFields(expect map[string]json.RawMessage) string {
	var fields []string
	for name, raw := range expect {
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			v = errors.New("?")
		}
		if name == "retryAfterSecMin" {
			fields = append(fields, fmt.Sprintf("retryAfterSec>=%v", v))
			continue
		}
		fields = append(fields, fmt.Sprintf("%s=%v", name, v))
	}
	sort.Strings(fields)
	return strings.Join(fields, " ")
}
