//go:build integration

package qemu

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/test/qemu/vm"
)

// guestHost is the host as a guest on QEMU user networking sees it.
const guestHost = "10.0.2.2"

// hostRelay is a real torpor-relay process on the host's loopback.
type hostRelay struct {
	proc *procs.Proc
	addr string // 127.0.0.1:port, where it listens
	// URL is the relay's public origin, the audience of every DID Bearer
	// token: http://10.0.2.2:port for a guest, else http://addr.
	URL string
	// HTTP reaches the relay whatever host URL names: a sender on the
	// host uses the guest's URL (the tokens' audience) and this client.
	HTTP *http.Client
}

// relayOptions configure startRelay.
type relayOptions struct {
	// Guest makes the relay's public URL the guest's view of the host
	// (QEMU's slirp connects 10.0.2.2:port to the host's 127.0.0.1:port),
	// so that the agent in the guest and senders on the host present
	// tokens for the same audience.
	Guest bool
	// Data is the relay's data directory; "" means a fresh one.
	Data string
	// Args are more flags.
	Args []string
	// Allow are the DIDs of the test's devices: they are admitted
	// (--allow-agent), not on a new device's probation.
	Allow []string
	// Bin is a torpor-relay binary for the host to run; "" builds this
	// tree's.
	Bin string
}

// startRelay builds torpor-relay for the host and starts it on a free
// loopback port with an embedded MQTT broker; it is stopped when the test
// ends.
func startRelay(t testing.TB, o relayOptions) *hostRelay {
	t.Helper()
	bin := o.Bin
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "torpor-relay")
		if err := os.WriteFile(bin, vm.CrossBinary(t, "./cmd/torpor-relay", goruntime.GOARCH, ""), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port := testenv.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	r := &hostRelay{addr: addr, URL: "http://" + addr}
	if o.Guest {
		r.URL = fmt.Sprintf("http://%s:%d", guestHost, port)
	}
	r.HTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}}
	dir := t.TempDir()
	if o.Data == "" {
		o.Data = filepath.Join(dir, "data")
	}
	args := append([]string{"--listen", addr, "--public-url", r.URL, "--mqtt-listen", "127.0.0.1:0",
		"--data-dir", o.Data, "--per-agent-metrics"}, o.Args...)
	for _, d := range o.Allow {
		args = append(args, "--allow-agent", d)
	}
	var err error
	if r.proc, err = procs.StartProc("relay", bin, args, dir, filepath.Join(dir, "relay.log"), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.proc.Stop(10 * time.Second); err != nil {
			t.Errorf("relay: %v", err)
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "relay.log"))
			t.Logf("relay log:\n%s", b)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := r.proc.Out().Await(ctx, 0, func(l procs.Line) bool { return l.Msg == "torpor-relay listening" }); err != nil {
		t.Fatalf("torpor-relay did not start: %v", err)
	}
	return r
}

// newSender returns a sender with a fresh key and its own session store,
// talking to r.
func newSender(t testing.TB, r *hostRelay) (*sender.Client, *did.PrivateKey) {
	t.Helper()
	key := didtest.New(t)
	dir := filepath.Join(t.TempDir(), "sender")
	if err := os.Mkdir(dir, 0o700); err != nil { // session.CheckPrivate
		t.Fatal(err)
	}
	c, err := sender.Open(filepath.Join(dir, "sender.db"), key, r.HTTP, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, key
}

// letter is one object a test sends and what the agent should do with it.
type letter struct {
	id      string
	text    string
	purpose string
	obj     json.RawMessage
	deliver bool // the handler must receive it; otherwise it is rejected
}

// message signs a Governed Object by key with purpose and a text payload,
// valid for an hour from now.
func message(t testing.TB, key *did.PrivateKey, purpose, text string) letter {
	t.Helper()
	return signLetter(t, key, purpose, text, time.Now(), time.Hour)
}

// signLetter signs a Governed Object by key with purpose and a text
// payload, issued at issued and valid for ttl.
func signLetter(t testing.TB, key *did.PrivateKey, purpose, text string, issued time.Time, ttl time.Duration) letter {
	t.Helper()
	o, err := governed.Sign(key, governed.Template{IssuedAt: issued, Purpose: purpose, TTL: ttl,
		Semantic: governed.Semantic{Schema: "urn:torpor:test:qemu"}, Payload: map[string]string{"text": text}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return letter{id: o.ID, text: text, purpose: purpose, obj: b}
}

// sendAll establishes a pair session with the agent through the relay and
// sends every letter; each must be queued (503 agent_asleep) because the
// agent sleeps.
func sendAll(t testing.TB, s *sender.Client, r *hostRelay, agent did.DID, letters []letter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	peer := sender.RelayPeer(r.URL, agent)
	if _, err := s.Establish(ctx, peer); err != nil {
		t.Fatalf("establishing the pair session through the relay: %v", err)
	}
	for _, l := range letters {
		d, err := s.Send(ctx, peer, l.obj)
		if err != nil {
			t.Fatalf("sending %q: %v", l.text, err)
		}
		if !d.Queued || d.Status != http.StatusServiceUnavailable {
			t.Fatalf("sending %q: status %d queued %v, want 503 queued: the agent should be asleep", l.text, d.Status, d.Queued)
		}
	}
}
