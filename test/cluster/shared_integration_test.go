//go:build integration

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// sharedBudget is the KeyPackage budget the relays of
// TestSharedMemoriesAcrossRelays get: one budget for the fleet.
const sharedBudget = 5

// TestSharedMemoriesAcrossRelays: three relays started at once on an empty
// 3-node cluster all start (creating the streams and buckets, the shared
// one included, races and converges), and then share their security and
// budget memories: a link token, an operator token and a login token
// spent at one relay are refused at the other two; a KeyPackage budget of
// 5 gives 5 KeyPackages to 15 concurrent fetches over the 3 relays, and
// the next fetch is refused at each relay; a console session made at
// relay 1 is good at relays 2 and 3; 60 devices whose windows open in
// one minute, linking 6 at a time over the 3 relays, get its 60 seconds.
func TestSharedMemoriesAcrossRelays(t *testing.T) {
	f := startFleetAtOnce(t, 3, "--keypackage-budget", "5", "--keypackage-budget-window", "1h")
	t.Run("link token", func(t *testing.T) { linkTokenOnce(t, f) })
	t.Run("operator token", func(t *testing.T) { operatorTokenOnce(t, f) })
	t.Run("KeyPackage budget", func(t *testing.T) { oneKeyPackageBudget(t, f) })
	t.Run("console session", func(t *testing.T) { consoleSessionEverywhere(t, f) })
	t.Run("wake seconds", func(t *testing.T) { wakeSecondsOfTheFleet(t, f) })
}

// startedRE matches the relay's log line that it serves, or that it gave
// up.
var startedRE = regexp.MustCompile(`msg="torpor-relay (listening" addr=(\S+)|stopped" err=.*)`)

// startFleetAtOnce starts a new 3-node cluster in the test process and n
// relays on it at the same instant, each given another server first, and
// fails unless every relay serves; it checks that the shared bucket has
// the cluster's 3 replicas.
func startFleetAtOnce(t *testing.T, n int, extra ...string) *fleet {
	f := startNATS(t)
	ns := f.nats
	bin := testenv.Binary(t, "torpor-relay")
	var procs []*relaytest.Relay
	for i := range n {
		urls := []string{ns[i%3].URL(), ns[(i+1)%3].URL(), ns[(i+2)%3].URL()}
		args := append([]string{"--operator", fleetOperator(t).DID().String()}, jetstreamArgs(urls, extra)...)
		procs = append(procs, relaytest.Launch(t, bin, t.TempDir(), args...))
	}
	for i, p := range procs {
		m := p.WaitWithin(t, 2*time.Minute, startedRE)
		if m[2] == "" {
			t.Fatalf("relay %d, started with the others on an empty cluster, stopped: %s", i+1, m[1])
		}
		p.URL = m[2]
		f.relays = append(f.relays, &relayProc{Relay: p, addr: p.URL})
	}
	nc, err := nats.Connect(ns[0].URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := js.Stream(ctx, "KV_"+jsstore.SharedBucket)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.CachedInfo().Config; c.Replicas != 3 || !c.AllowMsgTTL || c.AllowDirect {
		t.Fatalf("bucket %s after the concurrent start: %d replicas, allow_msg_ttl %v, allow_direct %v; want 3, true, false", jsstore.SharedBucket, c.Replicas, c.AllowMsgTTL, c.AllowDirect)
	}
	return f
}

// dialLink opens the link WebSocket of the relay at addr with the
// Authorization authz and returns the HTTP status (101 when it upgraded)
// and the refusal's body.
func dialLink(t *testing.T, addr, authz string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(addr, "http")+wire.Path, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {authz}}, Subprotocols: []string{wire.Subprotocol}})
	if err == nil {
		conn.CloseNow()
		return http.StatusSwitchingProtocols, ""
	}
	if resp == nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b) + " " + resp.Header.Get("WWW-Authenticate")
}

// linkTokenOnce: a link token that opened a link at relay 1 is refused at
// relays 2 and 3 (and at 1 again).
func linkTokenOnce(t *testing.T, f *fleet) {
	dev := relaytest.Key(t, 40)
	admitDevice(t, f.relays[0].addr, dev)
	tok, err := bearer.IssueLink(dev, publicURL, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	authz := bearer.Authorization(tok)
	if status, body := dialLink(t, f.relays[0].addr, authz); status != http.StatusSwitchingProtocols {
		t.Fatalf("a new link token at relay 1: %d %s", status, body)
	}
	for _, i := range []int{1, 2, 0} {
		status, body := dialLink(t, f.relays[i].addr, authz)
		if status != http.StatusUnauthorized || !strings.Contains(body, "link token already used") {
			t.Errorf("the spent link token at relay %d: %d %s; want 401 link token already used", i+1, status, body)
		}
	}
}

// operatorTokenOnce: an operator token for one request, made at relay 2,
// is refused when replayed at relays 3 and 1.
func operatorTokenOnce(t *testing.T, f *fleet) {
	dev := relaytest.Key(t, 41)
	path := "/operator/agents/" + dev.DID().String() + "/admit"
	tok, err := bearer.IssuePurpose(fleetOperator(t), publicURL, bearer.OperatorPurpose(http.MethodPost, path), time.Now(), bearer.OperatorTTL)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Authorization": {bearer.Authorization(tok)}}
	if a := relaytest.Do(t, http.MethodPost, f.relays[1].addr+path, h, nil); a.Status != http.StatusOK {
		t.Fatalf("the operator token at relay 2: %s", a)
	}
	for _, i := range []int{2, 0} {
		if a := relaytest.Do(t, http.MethodPost, f.relays[i].addr+path, h, nil); a.Status != http.StatusUnauthorized || !strings.Contains(string(a.Body), "already used") {
			t.Errorf("the spent operator token at relay %d: %s; want 401 already used", i+1, a)
		}
	}
}

// oneKeyPackageBudget: a device pools 12 KeyPackages and has no
// last-resort one; 15 fetches at once over the 3 relays get exactly 5
// (the budget), the others 429 key_package_budget, and then a fetch at
// each relay is refused too.
func oneKeyPackageBudget(t *testing.T, f *fleet) {
	dev := relaytest.Key(t, 42)
	kps := make([][]byte, 12)
	for i := range kps {
		kps[i] = relaytest.KeyPackage(t, dev)
	}
	publish(t, f.relays[0].addr, dev, device{mode: "sleep", kps: kps})
	h := http.Header{"Authorization": {bearer.Authorization(relaytest.Token(t, relaytest.Key(t, 43), publicURL))}}
	fetch := func(i int) relaytest.Response {
		return relaytest.Do(t, http.MethodGet, f.relays[i%3].addr+"/a/"+dev.DID().String()+"/mls/key-package", h, nil)
	}
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := range 15 {
		wg.Go(func() {
			a := fetch(i)
			if a.Status == http.StatusTooManyRequests && a.JSON()["error"] != "key_package_budget" {
				t.Errorf("fetch %d: %s", i, a)
			}
			mu.Lock()
			statuses[a.Status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[http.StatusOK] != sharedBudget || statuses[http.StatusTooManyRequests] != 15-sharedBudget {
		t.Errorf("15 fetches over 3 relays with a budget of %d: %v; want %d 200 and %d 429", sharedBudget, statuses, sharedBudget, 15-sharedBudget)
	}
	for i := range 3 {
		if a := fetch(i); a.Status != http.StatusTooManyRequests || a.JSON()["error"] != "key_package_budget" || a.Header.Get("Retry-After") == "" {
			t.Errorf("a fetch past the budget at relay %d: %s %v; want 429 key_package_budget with Retry-After", i+1, a, a.Header)
		}
	}
}

// consoleSessionEverywhere: the session cookie of a login at relay 1 opens
// the console's API at relays 2 and 3; the login link, used at relay 1,
// is refused at relay 2.
func consoleSessionEverywhere(t *testing.T, f *fleet) {
	tok, err := bearer.IssuePurpose(fleetOperator(t), publicURL, bearer.PurposeFleetLogin, time.Now(), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	login := "/fleet/login?token=" + url.QueryEscape(tok)
	noRedirect := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(f.relays[0].addr + login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "torpor_fleet" {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("login at relay 1: %s, cookies %v; want 303 with torpor_fleet", resp.Status, resp.Cookies())
	}
	for i, r := range f.relays {
		a := relaytest.Do(t, http.MethodGet, r.addr+"/fleet/api/devices", http.Header{"Cookie": {cookie.String()}}, nil)
		var v any
		if a.Status != http.StatusOK || json.Unmarshal(a.Body, &v) != nil {
			t.Errorf("the console's API at relay %d with relay 1's session cookie: %s", i+1, a)
		}
	}
	resp, err = noRedirect.Get(f.relays[1].addr + login)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "used already") {
		t.Errorf("the login link used at relay 1, at relay 2: %s %.200s; want 403 used already", resp.Status, b)
	}
}

// wakeSecondsOfTheFleet: 60 devices in hourly_wake mode, all with windows
// opening at minute 11, publish through the 3 relays in turn, 6 at once:
// the relays assign from one count, so the 60 get 60 different seconds.
func wakeSecondsOfTheFleet(t *testing.T, f *fleet) {
	const n = 60
	secs := make([]int, n)
	sem := make(chan struct{}, 6)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s, err := publishWindow(f.relays[i%3].addr, relaytest.Key(t, 100+i), 11)
			if err != nil {
				t.Errorf("device %d: %v", i, err)
			}
			secs[i] = s
		})
	}
	wg.Wait()
	seen := map[int]int{}
	for _, s := range secs {
		seen[s]++
	}
	if len(seen) != n {
		t.Errorf("%d devices of one minute got %d different wake seconds over 3 relays, want %d: %v", n, len(seen), n, seen)
	}
}

// publishWindow links dev to the relay at addr, publishes hourly_wake
// with a window opening at minute, and returns the wake second the
// relay's state-ok assigns.
func publishWindow(addr string, dev *did.PrivateKey, minute int) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: addr, Audience: publicURL, Key: dev})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	b := c.Hello()
	card, err := a2a.BuildCard(a2a.CardOptions{Name: "sleeper", BaseURL: publicURL + "/a/" + dev.DID().String(), OfflineMode: "hourly_wake", Bounds: &b})
	if err != nil {
		return 0, err
	}
	raw, err := a2a.SignCard(card, dev)
	if err != nil {
		return 0, err
	}
	ok, err := c.Publish(ctx, wire.State{Mode: "hourly_wake", Window: &wire.Window{Minute: minute, LengthSec: 300}, Card: raw})
	if err != nil {
		return 0, err
	}
	if ok.WakeSecond == nil {
		return 0, errors.New("the state-ok assigns no wake second")
	}
	return *ok.WakeSecond, nil
}
