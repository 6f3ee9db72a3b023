//go:build integration

package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// The relay's resource limits, KeyPackage fetch protection and device
// admission, against the real torpor-relay. Socket deadlines
// and the relay's periodic work run on real time: the waits below are
// bounded waits for the relay process, a real peer.

// harnessOperator is the operator DID newSleeper's relays list, which
// admits their sleeping device.
func harnessOperator(t testing.TB) *did.PrivateKey { return key(t, 0xAD0) }

// admit admits dev on the relay at url as op, with torporctl device admit.
func admit(t testing.TB, url string, op, dev *did.PrivateKey) {
	t.Helper()
	out, stderr, err := ctl(t, "device", "admit", "--relay", url, "--key", testenv.KeyFile(t, op), dev.DID().String())
	if err != nil || !strings.Contains(out, "admitted "+dev.DID().String()) {
		t.Fatalf("torporctl device admit: %v\n%s%s", err, out, stderr)
	}
}

// getKeyPackage fetches one of agent's KeyPackages as caller (nil: no
// token), with the X-Forwarded-For header xff unless empty.
func getKeyPackage(t testing.TB, url string, agent did.DID, caller *did.PrivateKey, xff string) answer {
	t.Helper()
	h := http.Header{}
	if caller != nil {
		h.Set("Authorization", "Bearer "+relaytest.Token(t, caller, url))
	}
	if xff != "" {
		h.Set("X-Forwarded-For", xff)
	}
	return do(t, "GET", url+"/a/"+agent.String()+"/mls/key-package", h, nil)
}

// publishState links dev and publishes st (its card is built and signed
// here, with the bounds the relay announced), and returns the link and
// the publish error.
func publishState(t testing.TB, url string, dev *did.PrivateKey, st wire.State) (*link.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: url, Key: dev})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	b := c.Hello()
	st.Card = relaytest.SignedCard(t, url, dev, a2a.CardOptions{Name: "limits", OfflineMode: st.Mode, Bounds: &b})
	_, err = c.Publish(ctx, st)
	return c, err
}

// genuineKeyPackages makes n KeyPackages of dev as its agent does.
func genuineKeyPackages(t testing.TB, dev *did.PrivateKey, n int) [][]byte {
	t.Helper()
	out := make([][]byte, n)
	for i := range out {
		b, _, _, err := session.NewKeyPackage(&mls.Config{}, dev)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// within waits up to d (real time: the relay is a real peer) for cond.
func within(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("after %v: %s", d, what)
}

// TestLimitsIdleKeepAliveClosed: an idle keep-alive connection is closed
// by the relay after --idle-timeout.
func TestLimitsIdleKeepAliveClosed(t *testing.T) {
	r := startRelay(t, "--idle-timeout", "500ms")
	c, err := net.Dial("tcp", strings.TrimPrefix(r.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle keep-alive: %v, want EOF: closed by the relay", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("closed after %v, want about 500 ms", d)
	}
}

// TestLimitsTrickledBodyCutOff: a body trickled at 1 byte per 5 s is cut
// off soon after --read-timeout, while a legitimate sender's message,
// accepted before, is kept and another is still accepted.
func TestLimitsTrickledBodyCutOff(t *testing.T) {
	s := newSleeper(t, 1, "--read-timeout", "1s")
	c, err := net.Dial("tcp", strings.TrimPrefix(s.relay.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /a/%s/a2a/jsonrpc HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nAuthorization: Bearer %s\r\nContent-Length: 200\r\n\r\n",
		s.dev.DID(), relaytest.Token(t, freshKey(t), s.relay.URL))
	cut := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			cut <- "closed: " + err.Error()
			return
		}
		cut <- resp.Status
	}()
	start := time.Now()
	for i := 0; ; i++ {
		if _, err := c.Write([]byte{'{'}); err != nil {
			break // the relay closed the connection
		}
		select {
		case how := <-cut:
			if strings.HasPrefix(how, "200") || strings.HasPrefix(how, "503") {
				t.Fatalf("the trickled body was answered %s, as if read in full", how)
			}
			if d := time.Since(start); d > 8*time.Second {
				t.Errorf("cut off after %v (%s), want soon after the 1 s read timeout", d, how)
			}
			s.kept(t)
			if a := s.send(t, s.sender, message(`"after"`, wirePart("after"))); a.Status != 503 || a.JSON()["queued"] != true {
				t.Errorf("legitimate message after the trickle: %s", a)
			}
			return
		case <-time.After(5 * time.Second): // 1 byte per 5 s
		}
		if i > 40 {
			t.Fatal("a body trickled at 1 byte per 5 s was never cut off")
		}
	}
}

// TestLimitsIdleConnectionsDoNotStarve: 1,100 connections opened and left
// idle hold a relay with --max-conns 100, yet a legitimate sender's
// message is accepted at once, and the link of its device too.
func TestLimitsIdleConnectionsDoNotStarve(t *testing.T) {
	s := newSleeper(t, 1, "--max-conns", "100", "--read-header-timeout", "5m", "--idle-timeout", "5m")
	addr := strings.TrimPrefix(s.relay.URL, "http://")
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 1100 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(idle), err)
		}
		idle = append(idle, c)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	req, _ := http.NewRequest("POST", s.relay.URL+"/a/"+s.dev.DID().String()+"/a2a/jsonrpc", strings.NewReader(message(`"legit"`, wirePart("legit"))))
	req.Header = http.Header{"Content-Type": {"application/json"}, "A2A-Version": {"1.0"}, "Authorization": {"Bearer " + relaytest.Token(t, s.sender, s.relay.URL)}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("legitimate message with 1,100 idle connections held: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), `"queued":true`) {
		t.Errorf("legitimate message: %d %s, want 503 queued", resp.StatusCode, b)
	}
	t.Logf("answered in %v with 1,100 idle connections against a cap of 100", time.Since(start))
	if len(s.kept(t)) != 2 {
		t.Error("the legitimate message is not queued")
	}
}

// TestLimitsBusyConnectionsRefused: when every connection up to
// --max-conns is busy (bodies being sent), a new one is answered 503
// too_many_connections at once, and nothing queued is lost.
func TestLimitsBusyConnectionsRefused(t *testing.T) {
	s := newSleeper(t, 1, "--max-conns", "3", "--read-timeout", "1m")
	addr := strings.TrimPrefix(s.relay.URL, "http://")
	http.DefaultClient.CloseIdleConnections() // the harness's keep-alives would be closed first
	// A connection that has not sent its request yet may be closed for a
	// newer one: open busy ones (a body begun, never finished) until a
	// probe is refused, which it is once all 3 slots are busy.
	var busy []net.Conn
	var a answer
	within(t, 20*time.Second, "a refusal with every connection busy", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		busy = append(busy, c)
		fmt.Fprintf(c, "POST /a/%s/a2a/jsonrpc HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n{", s.dev.DID(), relaytest.Token(t, s.sender, s.relay.URL))
		if len(busy) < 3 {
			return false
		}
		probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := probe.Get(s.relay.URL + "/healthz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		a = answer{Status: resp.StatusCode, Body: b}
		return resp.StatusCode == 503
	})
	if a.JSON()["error"] != "too_many_connections" || !strings.Contains(string(a.Body), "--max-conns") {
		t.Errorf("over a busy cap: %s, want 503 too_many_connections naming --max-conns", a)
	}
	for _, c := range busy {
		c.Close()
	}
	within(t, 10*time.Second, "the relay to serve again", func() bool {
		resp, err := http.Get(s.relay.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	s.kept(t)
}

// kpDevice starts a relay (extra flags) and publishes a sleeping device
// with n genuine KeyPackages and a last-resort one.
func kpDevice(t testing.TB, n int, extra ...string) (*relayProc, *did.PrivateKey) {
	t.Helper()
	r := startRelay(t, extra...)
	dev := freshKey(t)
	kps := genuineKeyPackages(t, dev, n+1)
	c, err := publishState(t, r.URL, dev, wire.State{Mode: "sleep", KeyPackages: kps[:n], LastResort: kps[n]})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	return r, dev
}

// TestLimitsKeyPackageNeedsToken: a KeyPackage fetch without a DID Bearer
// token is refused 401 with a challenge and takes nothing from the pool;
// with one it is served, and torporctl's sender (session/sender) fetches
// and verifies one.
func TestLimitsKeyPackageNeedsToken(t *testing.T) {
	r, dev := kpDevice(t, 3)
	a := getKeyPackage(t, r.URL, dev.DID(), nil, "")
	if a.Status != 401 || a.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("fetch without a token: %s, want 401 with WWW-Authenticate", a)
	}
	if a := getKeyPackage(t, r.URL, dev.DID(), freshKey(t), ""); a.Status != 200 || a.JSON()["lastResort"] != nil {
		t.Fatalf("fetch with a token: %s, want a pooled KeyPackage", a)
	}
	c := &sender.Client{Key: freshKey(t)}
	if _, err := c.FetchKeyPackage(context.Background(), sender.RelayPeer(r.URL, dev.DID())); err != nil {
		t.Fatalf("session/sender fetch: %v", err)
	}
	if a := getKeyPackage(t, r.URL, dev.DID(), freshKey(t), ""); a.Status != 200 || a.JSON()["lastResort"] != nil {
		t.Errorf("third fetch: %s, want the last pooled KeyPackage (the refused one took none)", a)
	}
}

// TestLimitsKeyPackageBudget: 10,000 made-up DIDs fetching at once take no
// more than --keypackage-budget KeyPackages from the pool; every other
// fetch, and afterwards a legitimate sender's, gets the last-resort
// KeyPackage, which verifies for the device.
func TestLimitsKeyPackageBudget(t *testing.T) {
	const budget, flood = 5, 10000
	r, dev := kpDevice(t, 20, "--keypackage-budget", "5", "--keypackage-rate", "100000")
	var fromPool, other atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < flood; i += 8 {
				req, _ := http.NewRequest("GET", r.URL+"/a/"+dev.DID().String()+"/mls/key-package", nil)
				req.Header.Set("Authorization", "Bearer "+relaytest.Token(t, key(t, 0x10000+i), r.URL))
				resp, err := client.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				var v struct{ LastResort bool }
				err = json.NewDecoder(resp.Body).Decode(&v)
				resp.Body.Close()
				switch {
				case resp.StatusCode != 200 || err != nil:
					other.Add(1)
				case !v.LastResort:
					fromPool.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d made-up DIDs: %d KeyPackages from the pool, %d failed fetches", flood, fromPool.Load(), other.Load())
	if fromPool.Load() != budget || other.Load() != 0 {
		t.Errorf("%d made-up DIDs took %d from the pool (%d failed), want the budget, %d, and the last-resort one for the rest", flood, fromPool.Load(), other.Load(), budget)
	}
	c := &sender.Client{Key: freshKey(t)}
	if _, err := c.FetchKeyPackage(context.Background(), sender.RelayPeer(r.URL, dev.DID())); err != nil {
		t.Errorf("a legitimate sender after the flood: %v, want the last-resort KeyPackage, verified", err)
	}
}

// TestLimitsForwardedForRightMost: behind a trusted proxy, the per-address
// rate limit counts the right-most untrusted X-Forwarded-For entry, so a
// client that varies what it puts on the left is still limited, and
// another client is not.
func TestLimitsForwardedForRightMost(t *testing.T) {
	r, dev := kpDevice(t, 30, "--trust-forwarded-for", "--trusted-proxy", "10.0.0.0/8", "--keypackage-rate", "1")
	// One client address may fetch ten times the per-DID rate: 10 a minute.
	for i := range 10 {
		xff := fmt.Sprintf("198.51.100.%d, 203.0.113.9, 10.1.1.1", i)
		if a := getKeyPackage(t, r.URL, dev.DID(), freshKey(t), xff); a.Status != 200 {
			t.Fatalf("fetch %d of client 203.0.113.9: %s", i, a)
		}
	}
	a := getKeyPackage(t, r.URL, dev.DID(), freshKey(t), "192.0.2.77, 203.0.113.9, 10.1.1.1")
	if a.Status != 429 || a.JSON()["error"] != "rate_limited" {
		t.Errorf("11th fetch of 203.0.113.9 with a new spoofed left entry: %s, want 429", a)
	}
	if a := getKeyPackage(t, r.URL, dev.DID(), freshKey(t), "203.0.113.9, 203.0.113.10"); a.Status != 200 {
		t.Errorf("another client behind the same proxy, spoofing the first: %s, want 200", a)
	}
}

// TestLimitsProbation: a fresh device on a relay without --allow-agent is
// on probation: its hello announces the small queue, a sender's sixth
// message is refused (429), and a state with more KeyPackages than
// probation allows, or one over 4 KiB, is refused saying so, storing
// nothing.
func TestLimitsProbation(t *testing.T) {
	r := startRelay(t)
	dev, alice := freshKey(t), freshKey(t)
	c, err := publishState(t, r.URL, dev, wire.State{Mode: "sleep"})
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Hello(); h.MaxMessages != 20 || h.MaxPerPeer != 5 || h.MaxBytes != 256<<10 {
		t.Errorf("hello of a fresh device: %+v, want probation's 20 messages, 5 per sender, 256 KiB", h)
	}
	c.Close()
	for i := range 6 {
		a := send(t, r.URL, dev.DID().String(), alice, "1.0", message(fmt.Sprint(i), wirePart("p")))
		if want := map[bool]int{true: 429, false: 503}[i == 5]; a.Status != want {
			t.Errorf("message %d on probation: %s, want %d", i, a, want)
		}
	}
	before := queued(t, r.URL, dev)
	kps := genuineKeyPackages(t, dev, 33)
	if _, err := publishState(t, r.URL, dev, wire.State{Mode: "sleep", KeyPackages: kps}); err == nil || !strings.Contains(err.Error(), "on probation") {
		t.Errorf("33 KeyPackages on probation: %v, want refused as on probation", err)
	}
	big := append([]byte{0, 1, 0, 5}, make([]byte, 5000)...)
	if _, err := publishState(t, r.URL, dev, wire.State{Mode: "sleep", LastResort: big}); err == nil || !strings.Contains(err.Error(), "on probation") {
		t.Errorf("a 5 KiB KeyPackage on probation: %v, want refused as on probation", err)
	}
	if a := getKeyPackage(t, r.URL, dev.DID(), alice, ""); a.Status != 503 || a.JSON()["error"] != "no_key_package" {
		t.Errorf("KeyPackage after the refusals: %s, want none stored", a)
	}
	assertKept(t, r.URL, dev, before)
}

// TestLimitsOperatorAdmits: only an operator of the relay admits a
// device (torporctl device admit); admitted, its next link gets the
// relay's own bounds, also after the relay restarts.
func TestLimitsOperatorAdmits(t *testing.T) {
	op, dev := key(t, 0xAD1), freshKey(t)
	dir := t.TempDir()
	r := startRelayIn(t, dir, "--operator", op.DID().String())
	if _, err := publishState(t, r.URL, dev, wire.State{Mode: "sleep"}); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := ctl(t, "device", "admit", "--relay", r.URL, "--key", testenv.KeyFile(t, freshKey(t)), dev.DID().String())
	if err == nil || !strings.Contains(stderr, "not_operator") {
		t.Fatalf("admit by a non-operator: %v %s %s, want refused not_operator", err, out, stderr)
	}
	if a := do(t, "POST", r.URL+"/operator/agents/"+dev.DID().String()+"/admit", nil, nil); a.Status != 401 {
		t.Errorf("admit without a token: %s, want 401", a)
	}
	admit(t, r.URL, op, dev)
	c, err := publishState(t, r.URL, dev, wire.State{Mode: "sleep"})
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Hello(); h.MaxMessages != 500 || h.MaxPerPeer != 50 {
		t.Errorf("hello after admission: %+v, want the relay's 500 and 50", h)
	}
	c.Close()
	r.Stop()
	r = startRelayIn(t, dir, "--operator", op.DID().String())
	c, err = publishState(t, r.URL, dev, wire.State{Mode: "sleep"})
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Hello(); h.MaxMessages != 500 {
		t.Errorf("hello after a restart: %+v, want the admission kept", h)
	}
}

// TestLimitsMaxAgents: beyond --max-agents a new admitted device's link
// is refused with 507 relay_full_agents naming the cap; the devices the
// relay has keep linking and their queues are untouched.
func TestLimitsMaxAgents(t *testing.T) {
	s := newSleeper(t, 2, "--max-agents", "2")
	op := harnessOperator(t)
	second, third := freshKey(t), freshKey(t)
	admit(t, s.relay.URL, op, second)
	admit(t, s.relay.URL, op, third)
	if _, err := publishState(t, s.relay.URL, second, wire.State{Mode: "sleep"}); err != nil {
		t.Fatalf("second agent: %v", err)
	}
	_, err := publishState(t, s.relay.URL, third, wire.State{Mode: "sleep"})
	if err == nil || !strings.Contains(err.Error(), "507") || !strings.Contains(err.Error(), "relay_full_agents") || !strings.Contains(err.Error(), "--max-agents") {
		t.Fatalf("third agent with --max-agents 2: %v, want 507 relay_full_agents naming the cap", err)
	}
	s.kept(t)
	publish(t, s.relay.URL, s.dev, "sleep")
}

// TestLimitsMaxStateBytes: once agents.db holds --max-state-bytes (here a
// relay restarted with a cap its file already passes), no new agent is
// stored (relay_full_state naming the cap); a known one still publishes
// and its queue is kept.
func TestLimitsMaxStateBytes(t *testing.T) {
	s := newSleeper(t, 1)
	s.relay.Stop()
	s.relay = startRelayIn(t, s.relay.Dir, "--max-state-bytes", "1")
	_, err := publishState(t, s.relay.URL, freshKey(t), wire.State{Mode: "sleep"})
	if err == nil || !strings.Contains(err.Error(), "relay_full_state") || !strings.Contains(err.Error(), "--max-state-bytes") {
		t.Fatalf("a new agent over the cap: %v, want relay_full_state naming the cap", err)
	}
	publish(t, s.relay.URL, s.dev, "sleep")
	s.kept(t)
}

// TestLimitsMaxQueueBytes: once all queues together hold
// --max-queue-bytes, sends to any agent are refused with 507
// relay_queue_full naming the cap, and what was queued is kept.
func TestLimitsMaxQueueBytes(t *testing.T) {
	s := newSleeper(t, 2, "--max-queue-bytes", "600")
	other := freshKey(t)
	admit(t, s.relay.URL, harnessOperator(t), other)
	publish(t, s.relay.URL, other, "sleep")
	a := send(t, s.relay.URL, other.DID().String(), s.sender, "1.0", message(`"over"`, wirePart(strings.Repeat("x", 200))))
	if a.Status != 507 || !strings.Contains(string(a.Body), "relay_queue_full") || !strings.Contains(string(a.Body), "--max-queue-bytes") || a.JSON()["queued"] != false {
		t.Fatalf("send over the relay's cap: %s, want 507 relay_queue_full naming the cap", a)
	}
	s.kept(t)
	if n := len(queued(t, s.relay.URL, other)); n != 0 {
		t.Errorf("%d records queued for the other agent over the cap", n)
	}
}

// relayNow returns the relay's clock (its /healthz), which runs faster
// under --time-scale.
func relayNow(t testing.TB, url string) time.Time {
	t.Helper()
	var h struct{ Now time.Time }
	if err := json.Unmarshal(do(t, "GET", url+"/healthz", nil, nil).Body, &h); err != nil {
		t.Fatal(err)
	}
	return h.Now
}

// authAt returns an Authorization header of k issued at the relay's now.
func authAt(t testing.TB, k *did.PrivateKey, url string) http.Header {
	t.Helper()
	tok, err := bearer.Issue(k, url, relayNow(t, url), 0)
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}, "A2A-Version": {"1.0"}}
}

// operatorAuthAt is authAt with an operator token for method and path
// (bearer.OperatorPurpose), single use.
func operatorAuthAt(t testing.TB, k *did.PrivateKey, url, method, path string) http.Header {
	t.Helper()
	tok, err := bearer.IssuePurpose(k, url, bearer.OperatorPurpose(method, path), relayNow(t, url), bearer.OperatorTTL)
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{"Authorization": {"Bearer " + tok}}
}

// TestLimitsForgetSilent: an agent whose device stays silent longer than
// --forget-after is forgotten on the relay's clock (here 1000 times real
// time): its card, KeyPackages and queued records are gone, and its DID
// is answered like any unknown one.
func TestLimitsForgetSilent(t *testing.T) {
	op := key(t, 0xAD2)
	r := startRelay(t, "--time-scale", "1000", "--forget-after", "10m", "--operator", op.DID().String())
	dev := freshKey(t)
	kps := genuineKeyPackages(t, dev, 3)
	c, err := publishState(t, r.URL, dev, wire.State{Mode: "sleep", KeyPackages: kps[:2], LastResort: kps[2]})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	a := do(t, "POST", r.URL+"/a/"+dev.DID().String()+"/a2a/jsonrpc", authAt(t, freshKey(t), r.URL), []byte(message(`"m"`, wirePart("m"))))
	if a.Status != 503 || a.JSON()["queued"] != true {
		t.Fatalf("send: %s", a)
	}
	within(t, 30*time.Second, "the silent agent to be forgotten", func() bool {
		return do(t, "GET", r.URL+"/a/"+dev.DID().String()+"/.well-known/agent-card.json", nil, nil).Status == 404
	})
	if a := do(t, "GET", r.URL+"/a/"+dev.DID().String()+"/mls/key-package", authAt(t, freshKey(t), r.URL), nil); a.Status != 404 {
		t.Errorf("KeyPackage of a forgotten agent: %s, want 404", a)
	}
	path := "/operator/queue/" + dev.DID().String()
	if a := do(t, "GET", r.URL+path, operatorAuthAt(t, op, r.URL, "GET", path), nil); a.Status != 200 || a.JSON()["messages"] != float64(0) {
		t.Errorf("queue of a forgotten agent: %s, want no records", a)
	}
	if n := r.Count(regexp.MustCompile(`msg="forgot a silent agent"`)); n != 1 {
		t.Errorf("the relay logged %d forgotten agents, want 1", n)
	}
}

// TestLimitsLinkOutlivesTimeouts: the device link (WebSocket) is exempt
// from --read-timeout and --write-timeout: it still carries a publish
// and a live request well after both have passed.
func TestLimitsLinkOutlivesTimeouts(t *testing.T) {
	r := startRelay(t, "--read-timeout", "1s", "--write-timeout", "1s", "--idle-timeout", "1s")
	dev := freshKey(t)
	c, err := publishState(t, r.URL, dev, wire.State{Mode: "always_on"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // past every timeout, in real time: the relay's sockets run on it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Publish(ctx, wire.State{Mode: "always_on", Card: nil}); err != nil {
		t.Errorf("publish over a 3 s old link: %v", err)
	}
	select {
	case <-c.Done():
		t.Error("the link was closed by the relay's timeouts")
	default:
	}
}
