//go:build integration

package link

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

var (
	statePublished = regexp.MustCompile(`msg="state published"`)
	linkUp         = regexp.MustCompile(`msg="link up"`)
	linkDown       = regexp.MustCompile(`msg="link down"`)
	handshakeFail  = regexp.MustCompile(`msg="link handshake failed"`)
)

// thiefDial opens a WebSocket to the relay's link with a stolen
// Authorization header. On an HTTP refusal it returns the status and the
// body with the WWW-Authenticate header.
func thiefDial(t *testing.T, relayURL, authorization string) (*websocket.Conn, int, string) {
	t.Helper()
	conn, resp, err := websocket.Dial(timeout(t), "ws"+strings.TrimPrefix(relayURL, "http")+wire.Path, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {authorization}}, Subprotocols: []string{wire.Subprotocol},
	})
	if err != nil {
		if resp == nil {
			t.Fatalf("dialling the relay: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, resp.StatusCode, string(b) + " " + resp.Header.Get("WWW-Authenticate")
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn, http.StatusSwitchingProtocols, ""
}

func readFrame(t *testing.T, conn *websocket.Conn) (*wire.Frame, error) {
	t.Helper()
	_, b, err := conn.Read(timeout(t))
	if err != nil {
		return nil, err
	}
	return wire.Decode(b)
}

// TestStolenLinkTokenReplayed: a link token copied off the wire (here by
// the proxy in front of the relay) after the device linked with it is
// refused, 401 with a description that says it was used; the device's
// link stays up.
func TestStolenLinkTokenReplayed(t *testing.T) {
	w := newWorld(t)
	dev := didtest.Key(t, 0x31)
	w.agent(t, dev)
	w.relay.Wait(t, statePublished, dev.DID().String())
	stolen := <-w.tap.tokens
	_, status, body := thiefDial(t, w.relay.URL, stolen)
	if status != http.StatusUnauthorized || !strings.Contains(body, "already used") || !strings.Contains(body, `error="invalid_token"`) {
		t.Errorf("replayed link token: %d %s; want 401 invalid_token, already used", status, body)
	}
	if n := w.relay.Count(linkDown, dev.DID().String()); n != 0 {
		t.Errorf("the device's link went down %d times after the replay", n)
	}
	if n := w.relay.Count(linkUp, dev.DID().String()); n != 1 {
		t.Errorf("%d links up for the device, want its one", n)
	}
}

// TestStolenLinkTokenWithoutKey: a link token stolen before the device
// could use it (the proxy keeps the device's request from the relay)
// opens a WebSocket, but the thief, who has the token and not the key,
// cannot answer the challenge: the relay closes the connection, and the
// device, linked meanwhile with a token of its own, keeps its link.
func TestStolenLinkTokenWithoutKey(t *testing.T) {
	w := newWorld(t)
	w.tap.steal = 1
	dev, thief := didtest.Key(t, 0x32), didtest.Key(t, 0x33)
	w.agent(t, dev)
	stolen := <-w.tap.tokens
	w.relay.Wait(t, statePublished, dev.DID().String()) // the device's retry, with a new token
	conn, status, body := thiefDial(t, w.relay.URL, stolen)
	if conn == nil {
		t.Fatalf("the unused stolen token: %d %s; want the upgrade and a challenge", status, body)
	}
	f, err := readFrame(t, conn)
	if err != nil || f.T != wire.FrameChallenge || f.Challenge == nil {
		t.Fatalf("first frame = %+v, %v; want a challenge", f, err)
	}
	// The best the thief can do: sign the right message with a key of its own.
	msg, err := wire.ProofMessage(*f.Challenge, dev.DID().String(), strings.TrimPrefix(stolen, "Bearer "))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := wire.Encode(&wire.Frame{T: wire.FrameProof, Proof: thief.Sign(msg)})
	if err := conn.Write(timeout(t), websocket.MessageBinary, b); err != nil {
		t.Fatal(err)
	}
	if f, err = readFrame(t, conn); err != nil || f.T != wire.FrameError || f.Code != "bad-proof" {
		t.Errorf("after the thief's proof: %+v, %v; want error bad-proof", f, err)
	}
	if _, err := readFrame(t, conn); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("the thief's connection after its proof: %v; want closed (policy violation)", err)
	}
	w.relay.Wait(t, handshakeFail, dev.DID().String())
	if n := w.relay.Count(linkDown, dev.DID().String()); n != 0 {
		t.Errorf("the device's link went down %d times: the thief's connection replaced it", n)
	}
	if n := w.relay.Count(linkUp, dev.DID().String()); n != 1 {
		t.Errorf("%d links up for the device, want its own one", n)
	}
	// The thief's attempt spent the token.
	if _, status, body := thiefDial(t, w.relay.URL, stolen); status != http.StatusUnauthorized || !strings.Contains(body, "already used") {
		t.Errorf("the stolen token a second time: %d %s; want 401, already used", status, body)
	}
}

// TestA2ATokenDoesNotOpenTheLink: the device's DID Bearer token for A2A
// (the reference's format, no purpose) is not a link token, and a link
// token does not authenticate an A2A request.
func TestA2ATokenDoesNotOpenTheLink(t *testing.T) {
	w := newWorld(t)
	dev := didtest.Key(t, 0x34)
	w.device(t, dev, "sleep", nil).Close()
	tok := relaytest.Token(t, dev, w.tap.srv.URL)
	if _, status, body := thiefDial(t, w.relay.URL, bearer.Authorization(tok)); status != http.StatusUnauthorized || !strings.Contains(body, "wrong purpose") {
		t.Errorf("A2A token at the link: %d %s; want 401 wrong purpose", status, body)
	}
	linkTok, err := bearer.IssueLink(dev, w.tap.srv.URL, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := post(t, w.relay.URL+"/a/"+dev.DID().String()+"/a2a/jsonrpc", bearer.Authorization(linkTok), sendBody(1))
	if r.status != http.StatusUnauthorized || !strings.Contains(r.body, "wrong purpose") || strings.Contains(r.body, `"queued":true`) {
		t.Errorf("link token at the A2A endpoint: %d %s; want 401 wrong purpose", r.status, r.body)
	}
}

func sendBody(id int) string {
	// A Governed Object part (the relay does not look inside the object):
	// a message the agent never takes, plain text, is refused at enqueue.
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"message/send","params":{"message":{"role":"user","messageId":"m` +
		strconv.Itoa(id) + `","parts":[{"kind":"data","data":{"mediaType":"` + a2a.MediaTypeDataObject + `","object":{"n":` + strconv.Itoa(id) + `}}}]}}}`
}

// TestAckOnlyWhatTheLinkReceived: an ack naming records not delivered on
// its own link (never pulled, or pulled on an earlier link) is refused
// with an error frame and the records stay queued.
func TestAckOnlyWhatTheLinkReceived(t *testing.T) {
	w := newWorld(t)
	dev, sender := didtest.Key(t, 0x36), didtest.Key(t, 0x37)
	w.device(t, dev, "sleep", nil).Close()
	w.relay.Wait(t, linkDown, dev.DID().String())
	tok := relaytest.Token(t, sender, w.tap.srv.URL)
	for i := range 3 {
		r := post(t, w.relay.URL+"/a/"+dev.DID().String()+"/a2a/jsonrpc", bearer.Authorization(tok), sendBody(i+1))
		if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, `"queued":true`) {
			t.Fatalf("send %d to the sleeping device: %d %s; want 503, queued", i, r.status, r.body)
		}
	}
	ctx := timeout(t)
	c1 := w.device(t, dev, "sleep", nil)
	recs, _, err := c1.Pull(ctx, 0, 1)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Pull = %d records, %v; want 1", len(recs), err)
	}
	var re *wire.RemoteError
	if err := c1.Ack(ctx, []uint64{recs[0].Seq, recs[0].Seq + 1, recs[0].Seq + 2}); !errors.As(err, &re) || re.Code != "ack-not-delivered" {
		t.Errorf("ack of records not pulled = %v; want error ack-not-delivered", err)
	}
	c2 := w.device(t, dev, "sleep", nil) // replaces c1
	if err := c2.Ack(ctx, []uint64{recs[0].Seq}); !errors.As(err, &re) || re.Code != "ack-not-delivered" {
		t.Errorf("ack on a new link of a record pulled on the old one = %v; want error ack-not-delivered", err)
	}
	all, _, err := c2.Pull(ctx, 0, 10)
	if err != nil || len(all) != 3 {
		t.Errorf("after the refused acks: %d records queued, %v; want all 3", len(all), err)
	}
}

// TestJunkKeyPackagesRefused: KeyPackages that are junk behind a valid
// 4-byte header, valid but bound to another DID, or duplicates of pooled
// ones are refused when published, and the pool hands out exactly the
// genuine ones.
func TestJunkKeyPackagesRefused(t *testing.T) {
	w := newWorld(t)
	dev, other := didtest.Key(t, 0x38), didtest.Key(t, 0x39)
	g1, g2 := relaytest.KeyPackage(t, dev), relaytest.KeyPackage(t, dev)
	c := w.device(t, dev, "sleep", [][]byte{g1, g2})
	ctx := timeout(t)
	for _, tt := range []struct {
		name string
		kp   []byte
		want string
	}{
		{"junk after a valid header", append([]byte{0, 1, 0, 5}, bytes.Repeat([]byte{0x42}, 200)...), "key package 0"},
		{"valid, bound to another DID", relaytest.KeyPackage(t, other), "key package 0"},
		{"a duplicate", g2, "duplicate"},
	} {
		st := w.state(t, c, dev, "sleep")
		st.KeyPackages = [][]byte{tt.kp}
		if _, err := c.Publish(ctx, st); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Publish = %v; want a refusal naming %q", tt.name, err, tt.want)
		}
	}
	for i, want := range [][]byte{g1, g2} {
		got, lastResort, status := fetchKeyPackage(t, w.relay.URL, dev.DID())
		if status != http.StatusOK || lastResort || !bytes.Equal(got, want) {
			t.Errorf("fetch %d: %d (last resort %v), the genuine KeyPackage %d: %v", i, status, lastResort, i, bytes.Equal(got, want))
		}
	}
	if _, _, status := fetchKeyPackage(t, w.relay.URL, dev.DID()); status != http.StatusServiceUnavailable {
		t.Errorf("fetch after the genuine ones: %d; want 503, the pool held nothing else", status)
	}
}

// answer is an HTTP answer: status, and body followed by the
// WWW-Authenticate header.
type answer struct {
	status int
	body   string
}

func post(t *testing.T, url, authorization, body string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(timeout(t), "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", authorization)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b) + " " + resp.Header.Get("WWW-Authenticate")}
}

// fetchKeyPackage fetches one of agent's KeyPackages from the relay and
// returns its bytes, or nil with the status when there is none.
func fetchKeyPackage(t *testing.T, relayURL string, agent did.DID) ([]byte, bool, int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, relayURL+"/a/"+agent.String()+"/mls/key-package", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Fetches need a DID Bearer token; any caller's will do.
	caller, err := did.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var health struct{ PublicURL string } // the token's audience: the relay's public URL
	if hr, err := http.Get(relayURL + "/healthz"); err == nil {
		json.NewDecoder(hr.Body).Decode(&health)
		hr.Body.Close()
	}
	tok := relaytest.Token(t, caller, health.PublicURL)
	req.Header.Set("Authorization", bearer.Authorization(tok))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Wire       string `json:"wire"`
		LastResort bool   `json:"lastResort"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, resp.StatusCode
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(v.Wire)
	if err != nil {
		t.Fatal(err)
	}
	return b, v.LastResort, resp.StatusCode
}

// device links key to the relay as a device would (link.Dial: the token,
// the proof), publishes mode with a card for the bounds in force and kps,
// and returns the link.
func (w *world) device(t *testing.T, key *did.PrivateKey, mode string, kps [][]byte) *link.Client {
	t.Helper()
	c, err := link.Dial(timeout(t), link.Config{RelayURL: w.relay.URL, Audience: w.tap.srv.URL, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	st := w.state(t, c, key, mode)
	st.KeyPackages = kps
	if _, err := c.Publish(timeout(t), st); err != nil {
		t.Fatal(err)
	}
	return c
}

// state is mode with a card signed by key for the bounds c's relay
// announced.
func (w *world) state(t *testing.T, c *link.Client, key *did.PrivateKey, mode string) wire.State {
	t.Helper()
	b := c.Hello()
	return wire.State{Mode: mode, Card: relaytest.SignedCard(t, w.tap.srv.URL, key, a2a.CardOptions{Name: "dev", OfflineMode: mode, Bounds: &b})}
}

// TestOverflowTokenRefused: a DID Bearer token whose iat and exp lie so far
// apart that exp − iat overflows int64 (iat −4.7e18, exp +4.7e18: the
// canonical form holds them exactly) is refused by the running relay as
// too long-lived, and nothing is queued. Before transport/bearer compared
// without overflow, such a token passed the 10-minute cap and never
// expired.
func TestOverflowTokenRefused(t *testing.T) {
	w := newWorld(t)
	dev, sender := didtest.Key(t, 0x3a), didtest.Key(t, 0x3b)
	w.device(t, dev, "sleep", nil).Close()
	body := `{"aud":"` + w.tap.srv.URL + `","did":"` + sender.DID().String() +
		`","exp":4700000000000000000,"iat":-4700000000000000000,"v":1}`
	tok := bearer.Prefix + base64.RawURLEncoding.EncodeToString([]byte(body)) + "." +
		base64.RawURLEncoding.EncodeToString(sender.Sign([]byte(body)))
	r := post(t, w.relay.URL+"/a/"+dev.DID().String()+"/a2a/jsonrpc", "Bearer "+tok, sendBody(1))
	if r.status != http.StatusUnauthorized || !strings.Contains(r.body, "lifetime too long") || strings.Contains(r.body, `"queued":true`) {
		t.Errorf("overflowing token: %d %s; want 401 lifetime too long", r.status, r.body)
	}
}
