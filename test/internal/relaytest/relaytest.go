// Package relaytest runs the real torpor-relay binary for the integration
// tests under test/, and does in a few lines what a device does on its
// link (publish a mode with a signed card and KeyPackages, pull the queue)
// and what a sender does over HTTP (a DID Bearer token, a JSON-RPC post).
package relaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Relay is a running torpor-relay.
type Relay struct {
	*testenv.Proc
	URL string // http://127.0.0.1:port, its address
	Dir string // its --data-dir
}

// ListenRE matches the relay's log line that says where it serves.
var ListenRE = regexp.MustCompile(`msg="torpor-relay listening" addr=(\S+)`)

// Start runs torpor-relay on the data directory dir with loopback ports
// chosen by the kernel and extra flags, and waits up to a minute until it
// serves (a relay on JetStream waits for its streams' placement first). It
// is killed when the test ends.
func Start(t testing.TB, dir string, extra ...string) *Relay {
	t.Helper()
	return StartBinary(t, testenv.Binary(t, "torpor-relay"), dir, extra...)
}

// StartBinary is Start with the torpor-relay binary bin, such as one
// testenv.BuildAt built of an earlier release.
func StartBinary(t testing.TB, bin, dir string, extra ...string) *Relay {
	t.Helper()
	r := Launch(t, bin, dir, extra...)
	r.URL = r.WaitWithin(t, time.Minute, ListenRE)[1]
	return r
}

// Launch runs the torpor-relay binary bin as Start does but returns at
// once, with URL empty: the caller waits for the relay's log line
// (ListenRE, or another that also matches a failed start) and sets URL,
// as a test of relays started together does.
func Launch(t testing.TB, bin, dir string, extra ...string) *Relay {
	t.Helper()
	args := append([]string{"--listen", "127.0.0.1:0", "--mqtt-listen", "127.0.0.1:0", "--data-dir", dir, "--log-level", "info"}, extra...)
	return &Relay{Proc: testenv.Start(t, bin, args...), Dir: dir}
}

// Key returns the Ed25519 key whose 32-byte seed is zero but for its
// last two bytes, n big-endian: the same key in every run, a different
// one for each of 65,536 senders and devices.
func Key(tb testing.TB, n int) *did.PrivateKey {
	tb.Helper()
	seed := make([]byte, 32)
	seed[30], seed[31] = byte(n>>8), byte(n)
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// Token returns a DID Bearer token of k for the audience aud (a relay's
// public origin), issued now.
func Token(t testing.TB, k *did.PrivateKey, aud string) string {
	t.Helper()
	tok, err := bearer.Issue(k, aud, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// KeyPackage returns an MLSMessage-wrapped KeyPackage of key's DID, made
// the way the agent makes them (session's credential, RFC 9420 Section
// 10): the relay verifies every KeyPackage a device publishes.
func KeyPackage(t testing.TB, key *did.PrivateKey) []byte {
	t.Helper()
	b, _, _, err := session.NewKeyPackage(&mls.Config{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Dial links dev to the relay at url as its device; the link is closed
// when the test ends.
func Dial(t testing.TB, url string, dev *did.PrivateKey) (*link.Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := link.Dial(ctx, link.Config{RelayURL: url, Key: dev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ctx
}

// Publish links dev, publishes mode ("sleep" queues everything) with a
// signed card whose bounds are those the relay announced, and closes the
// link, so that the relay answers for a device in that mode.
func Publish(t testing.TB, url string, dev *did.PrivateKey, mode string) {
	t.Helper()
	c, ctx := Dial(t, url, dev)
	defer c.Close()
	b := c.Hello()
	raw := SignedCard(t, url, dev, a2a.CardOptions{Name: "sleeper", OfflineMode: mode, Bounds: &b, Envelope: a2a.DefaultEnvelopeParams()})
	if _, err := c.Publish(ctx, wire.State{Mode: mode, Card: raw}); err != nil {
		t.Fatal(err)
	}
}

// SignedCard returns dev's agent card as a device publishes it: built of
// opts with its base URL under origin (the relay's public origin), and
// signed by dev.
func SignedCard(t testing.TB, origin string, dev *did.PrivateKey, opts a2a.CardOptions) []byte {
	t.Helper()
	opts.BaseURL = origin + "/a/" + dev.DID().String()
	card, err := a2a.BuildCard(opts)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := a2a.SignCard(card, dev)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// PullAll links dev and returns every queued record without
// acknowledging any.
func PullAll(t testing.TB, url string, dev *did.PrivateKey) []wire.Record {
	t.Helper()
	c, ctx := Dial(t, url, dev)
	defer c.Close()
	return Pull(t, ctx, c, false)
}

// Pull pulls every record queued for c's device, acknowledging each
// batch when ack is set.
func Pull(t testing.TB, ctx context.Context, c *link.Client, ack bool) []wire.Record {
	t.Helper()
	var all []wire.Record
	if err := pullEach(ctx, c, ack, func(recs []wire.Record) { all = append(all, recs...) }); err != nil {
		t.Fatal(err)
	}
	return all
}

// pullEach pulls every record queued for c's device in batches of 500,
// acknowledges each batch when ack is set, and then calls each with it.
// It returns the first error of the link or the relay's store.
func pullEach(ctx context.Context, c *link.Client, ack bool, each func([]wire.Record)) error {
	var after uint64
	for {
		recs, more, err := c.Pull(ctx, after, 500)
		if err != nil || len(recs) == 0 {
			return err
		}
		if ack {
			seqs := make([]uint64, len(recs))
			for i, r := range recs {
				seqs[i] = r.Seq
			}
			if err := c.Ack(ctx, seqs); err != nil {
				return err
			}
		}
		each(recs)
		if !more {
			return nil
		}
		after = recs[len(recs)-1].Seq
	}
}

// Response is a relay's whole HTTP answer, read by Post and Do.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the response's body into a map (nil when it is not a JSON
// object).
func (a Response) JSON() map[string]any {
	var m map[string]any
	json.Unmarshal(a.Body, &m)
	return m
}

// String is the status and the body.
func (a Response) String() string { return http.StatusText(a.Status) + " " + string(a.Body) }

// Post posts body to the JSON-RPC endpoint of the agent agentDID with a
// DID Bearer token of sender (none when sender is nil) and the A2A-Version
// header version (none when empty). Unlike Send, it fails the test on a
// transport error.
func Post(t testing.TB, url, agentDID string, sender *did.PrivateKey, version, body string) Response {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	if sender != nil {
		h.Set("Authorization", "Bearer "+Token(t, sender, url))
	}
	if version != "" {
		h.Set("A2A-Version", version)
	}
	return Do(t, "POST", url+"/a/"+agentDID+"/a2a/jsonrpc", h, []byte(body))
}

// Do makes one HTTP request and reads the whole answer.
func Do(t testing.TB, method, url string, h http.Header, body []byte) Response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{Status: r.StatusCode, Header: r.Header, Body: b}
}
