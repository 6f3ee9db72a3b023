package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// lastToken returns the Authorization header of the latest upgrade
// request: what a thief on the path (a logging proxy, say) would copy.
func (h *harness) lastToken(tb testing.TB) string {
	tb.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.tokens) == 0 {
		tb.Fatal("no upgrade request seen")
	}
	return h.tokens[len(h.tokens)-1]
}

// rawDial opens a WebSocket to the link with authorization and
// subprotocol, as a client that is not link.Dial would. On an HTTP
// refusal it returns the status and the body.
func (h *harness) rawDial(tb testing.TB, authorization, subprotocol string) (*websocket.Conn, int, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.http.URL, "http")+wire.Path, &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": {authorization}},
		Subprotocols: []string{subprotocol},
	})
	if err != nil {
		if resp == nil {
			tb.Fatalf("dial: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, resp.StatusCode, string(b) + " " + resp.Header.Get("WWW-Authenticate")
	}
	tb.Cleanup(func() { conn.CloseNow() })
	conn.SetReadLimit(wire.MaxFrame)
	return conn, http.StatusSwitchingProtocols, ""
}

// challenged opens a WebSocket to the link with a fresh link token of dev
// and reads the relay's first frame, its challenge: the handshake up to
// the device's proof.
func (h *harness) challenged(tb testing.TB, dev *did.PrivateKey) (*websocket.Conn, string, wire.Challenge) {
	tb.Helper()
	tok, err := bearer.IssueLink(dev, h.http.URL, time.Now(), 0)
	if err != nil {
		tb.Fatal(err)
	}
	conn, status, body := h.rawDial(tb, bearer.Authorization(tok), wire.Subprotocol)
	if conn == nil {
		tb.Fatalf("upgrade: %d %s", status, body)
	}
	f, err := readFrame(tb, conn)
	if err != nil || f.T != wire.FrameChallenge || f.Challenge == nil {
		tb.Fatalf("first frame = %+v, %v; want a challenge", f, err)
	}
	return conn, tok, *f.Challenge
}

func readFrame(tb testing.TB, conn *websocket.Conn) (*wire.Frame, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	return wire.Decode(b)
}

func writeFrame(tb testing.TB, conn *websocket.Conn, f *wire.Frame) {
	tb.Helper()
	b, err := wire.Encode(f)
	if err != nil {
		tb.Fatal(err)
	}
	if err := conn.Write(context.Background(), websocket.MessageBinary, b); err != nil {
		tb.Fatal(err)
	}
}

// TestLinkTokenSingleUse: the token a device opened its link with is
// refused when presented again, with a 401 that says why.
func TestLinkTokenSingleUse(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	h.dial(t, dev, nil)
	_, status, body := h.rawDial(t, h.lastToken(t), wire.Subprotocol)
	if status != http.StatusUnauthorized || !strings.Contains(body, "already used") || !strings.Contains(body, `error="invalid_token"`) {
		t.Errorf("replayed link token: %d %s; want 401 invalid_token, already used", status, body)
	}
	if !h.srv.Up(dev.DID().String()) {
		t.Error("the device's link went down after the replay")
	}
}

// TestLinkTokenPurpose: an A2A token (no purpose claim, the reference's
// format) does not open a link, even for the right DID and origin.
func TestLinkTokenPurpose(t *testing.T) {
	h := newHarness(t)
	tok, err := bearer.Issue(didtest.Key(t, 1), h.http.URL, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, status, body := h.rawDial(t, bearer.Authorization(tok), wire.Subprotocol)
	if status != http.StatusUnauthorized || !strings.Contains(body, "wrong purpose") {
		t.Errorf("A2A token at the link: %d %s; want 401 wrong purpose", status, body)
	}
}

// TestHandshakeNeedsTheKey: a fresh link token, never presented (taken
// before its device could use it), opens a WebSocket but not a link
// without a signature by the device key; the device's live link stays.
func TestHandshakeNeedsTheKey(t *testing.T) {
	h := newHarness(t)
	dev, thief := didtest.Key(t, 1), didtest.Key(t, 2)
	h.dial(t, dev, nil)
	for _, tt := range []struct {
		name  string
		proof func(wire.Challenge, string) []byte
	}{
		{"no signature", func(wire.Challenge, string) []byte { return nil }},
		{"signed by another key", func(c wire.Challenge, tok string) []byte {
			m, _ := wire.ProofMessage(c, dev.DID().String(), tok)
			return thief.Sign(m)
		}},
		{"device's signature without the context", func(c wire.Challenge, tok string) []byte {
			m, _ := wire.ProofMessage(c, dev.DID().String(), tok)
			return dev.Sign(m[len(wire.ProofContext):])
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, tok, c := h.challenged(t, dev)
			writeFrame(t, conn, &wire.Frame{T: wire.FrameProof, Proof: tt.proof(c, tok)})
			f, err := readFrame(t, conn)
			if err != nil || f.T != wire.FrameError || f.Code != "bad-proof" {
				t.Errorf("after a bad proof: %+v, %v; want error bad-proof", f, err)
			}
			if _, err := readFrame(t, conn); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Errorf("after a bad proof the connection: %v; want closed, policy violation", err)
			}
			if len(h.agents.events) != 0 {
				t.Errorf("the holder's connection changed the agent's link: %d Linked events", len(h.agents.events))
			}
		})
	}
}

// TestOldClientRefused: a version 1 client (no handshake proof) gets a
// 400 that tells it to upgrade.
func TestOldClientRefused(t *testing.T) {
	h := newHarness(t)
	tok, err := bearer.IssueLink(didtest.Key(t, 1), h.http.URL, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, status, body := h.rawDial(t, bearer.Authorization(tok), wire.SubprotocolV1)
	if status != http.StatusBadRequest || !strings.Contains(body, "link_version") || !strings.Contains(body, "upgrade torpor-agent") {
		t.Errorf("v1 client: %d %s; want 400 link_version, upgrade", status, body)
	}
}

// TestAckOnlyWhatThisLinkReceived: an ack naming a record not delivered on
// its link is refused with an error frame and deletes nothing, not even
// the records of the same ack that were delivered.
func TestAckOnlyWhatThisLinkReceived(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	h.enqueue(t, dev.DID(), 4)
	c := h.dial(t, dev, nil)
	ctx := context.Background()
	recs, _, err := c.Pull(ctx, 0, 2)
	if err != nil || len(recs) != 2 {
		t.Fatalf("Pull = %d records, %v", len(recs), err)
	}
	var re *wire.RemoteError
	err = c.Ack(ctx, []uint64{recs[0].Seq, recs[1].Seq + 1})
	if !errors.As(err, &re) || re.Code != CodeNotDelivered {
		t.Fatalf("ack of a record not pulled = %v, want %s", err, CodeNotDelivered)
	}
	// A newer link of the same device: the first one's deliveries are not
	// its own.
	c2, err := link.Dial(ctx, link.Config{RelayURL: h.http.URL, Key: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	<-c.Done()
	if err := c2.Ack(ctx, []uint64{recs[0].Seq}); !errors.As(err, &re) || re.Code != CodeNotDelivered {
		t.Errorf("ack on a second link of a record delivered on the first = %v, want %s", err, CodeNotDelivered)
	}
	all, _, err := c2.Pull(ctx, 0, 10)
	if err != nil || len(all) != 4 {
		t.Fatalf("after refused acks: %d records held, %v; want all 4", len(all), err)
	}
	if err := c2.Ack(ctx, []uint64{all[0].Seq, all[3].Seq}); err != nil {
		t.Fatalf("ack of records delivered on this link = %v", err)
	}
	if st, err := h.q.Stats(ctx, dev.DID().String(), time.Now()); err != nil || st.Messages != 2 {
		t.Errorf("queue after acking 2 of 4: %d records, %v; want 2", st.Messages, err)
	}
}

// TestSpentTokensBounded: the table of spent link tokens holds at most
// MaxSpentTokens unexpired ones; past that a new link is refused (503),
// also while the tokens are expired but within the clock skew the verifier
// allows, and once that passed their entries make room again.
func TestSpentTokensBounded(t *testing.T) {
	h := newHarness(t)
	clk := clocktest.New(time.Now())
	h.srv.Clock, h.srv.Verifier.Clock, h.srv.MaxSpentTokens = clk, clk, 2
	dev := didtest.Key(t, 1)
	issue := func() string {
		tok, err := bearer.IssueLink(dev, h.http.URL, clk.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return bearer.Authorization(tok)
	}
	for i := range 2 {
		if _, status, body := h.rawDial(t, issue(), wire.Subprotocol); status != http.StatusSwitchingProtocols {
			t.Fatalf("link %d: %d %s", i, status, body)
		}
	}
	if _, status, body := h.rawDial(t, issue(), wire.Subprotocol); status != http.StatusServiceUnavailable || !strings.Contains(body, "link_busy") {
		t.Errorf("a third link with two unexpired tokens held: %d %s; want 503 link_busy", status, body)
	}
	clk.Advance(bearer.DefaultTTL + bearer.DefaultSkew - time.Second)
	if _, status, body := h.rawDial(t, issue(), wire.Subprotocol); status != http.StatusServiceUnavailable {
		t.Errorf("a link while the held tokens are within their skew allowance: %d %s; want 503", status, body)
	}
	clk.Advance(2 * time.Second)
	if _, status, body := h.rawDial(t, issue(), wire.Subprotocol); status != http.StatusSwitchingProtocols {
		t.Errorf("a link after the held tokens expired: %d %s; want the upgrade", status, body)
	}
}

// TestHandshakeWaitsInRealTime: the wait for the device's proof is a wait
// for a peer, so it runs unscaled (the clock package's rule). On a relay
// whose clock runs 180 times faster, a proof that comes one base second
// after the challenge (three scaled minutes, past HandshakeTimeout) is
// still taken; on the scaled clock the wait ended after 55 ms.
func TestHandshakeWaitsInRealTime(t *testing.T) {
	h := newHarness(t)
	base := clocktest.New(time.Now())
	scaled, err := clock.NewScaled(base, 180)
	if err != nil {
		t.Fatal(err)
	}
	h.srv.Clock = scaled
	dev := didtest.Key(t, 1)
	conn, tok, c := h.challenged(t, dev)
	base.Advance(time.Second)
	m, err := wire.ProofMessage(c, dev.DID().String(), tok)
	if err != nil {
		t.Fatal(err)
	}
	writeFrame(t, conn, &wire.Frame{T: wire.FrameProof, Proof: dev.Sign(m)})
	if f, err := readFrame(t, conn); err != nil || f.T == wire.FrameError {
		t.Errorf("after a proof one base second late: %+v, %v; want the link accepted", f, err)
	}
}
