package sender_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/runtime/sessions"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/session/kpcheck"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// world is a real relay on loopback with a sleeping device behind it.
type world struct {
	clk    *clocktest.Clock
	srv    *httptest.Server
	dev    *did.PrivateKey
	device *runtimetest.Device
	client *sender.Client
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{clk: clocktest.New(t0), dev: runtimetest.Key(t, 2)}
	dir := t.TempDir()
	q, err := queue.OpenBolt(filepath.Join(dir, "queue.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	states, err := agents.OpenBolt(filepath.Join(dir, "agents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewUnstartedServer(nil)
	r, err := relay.New(relay.Config{PublicURL: "http://" + w.srv.Listener.Addr().String(), Stores: relay.Stores{Queue: q, States: states}, Clock: w.clk, KeyPackages: kpcheck.Verifier{}})
	if err != nil {
		t.Fatal(err)
	}
	w.srv.Config.Handler = r.Handler()
	w.srv.Start()
	t.Cleanup(func() { r.Link().Close(); w.srv.Close(); q.Close(); states.Close() })

	// The device.
	w.device = runtimetest.NewDevice(t, w.dev, w.clk, filepath.Join(dir, "device.db"), nil)

	// The sender.
	if w.client, err = sender.Open(filepath.Join(dir, "sender", "sessions.db"), runtimetest.Key(t, 1), nil, w.clk); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.client.Close() })
	return w
}

// publish links the device, publishes its sleep mode with a signed card
// and its KeyPackage pool, and returns the link.
func (w *world) publish(t *testing.T) *link.Client {
	t.Helper()
	c, err := link.Dial(context.Background(), link.Config{RelayURL: w.srv.URL, Key: w.dev, Clock: w.clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	kps := sessions.KeyPackages{S: w.device.S, DB: w.device.DB}
	pool, err := kps.Refill(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	b := c.Hello()
	card, err := a2a.BuildCard(a2a.CardOptions{Name: "dev", BaseURL: w.srv.URL + "/a/" + w.dev.DID().String(), OfflineMode: "sleep", Bounds: &b})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := a2a.SignCard(card, w.dev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(context.Background(), wire.State{Mode: "sleep", Card: raw, KeyPackages: pool}); err != nil {
		t.Fatal(err)
	}
	if _, err := kps.Published(context.Background(), pool, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// drain pulls what the relay queued and runs it through the device's
// drain, acknowledging over the link.
func (w *world) drain(t *testing.T, c *link.Client) drain.Report {
	t.Helper()
	recs, _, err := c.Pull(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var in []drain.Record
	for _, r := range recs {
		in = append(in, drain.Record{Seq: r.Seq, From: r.From, Body: r.Body})
	}
	rep, err := w.device.Pipe.Batch(context.Background(), in, c.Ack)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func (w *world) peer() sender.Peer { return sender.RelayPeer(w.srv.URL, w.dev.DID()) }

// TestSendThroughRelay: a sender establishes a pair session with a
// sleeping agent through the real relay and sends encrypted Governed
// Objects; the relay queues them; the device drains them and delivers the
// objects, with the sender's DID as the MLS sender.
func TestSendThroughRelay(t *testing.T) {
	w := newWorld(t)
	c := w.publish(t)
	key := w.client.Key
	objs := [][]byte{
		runtimetest.Object(t, key, "comms:message", t0, time.Hour, map[string]any{"n": 1}),
		runtimetest.Object(t, key, "comms:message", t0, time.Hour, map[string]any{"n": 2}),
	}
	for _, o := range objs {
		d, err := w.client.Send(context.Background(), w.peer(), o)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Queued || d.Status != http.StatusServiceUnavailable {
			t.Errorf("delivery = %+v, want queued by the relay", d)
		}
	}
	rep := w.drain(t, c)
	if rep.Handshake != 1 || rep.Accepted != 2 || rep.RejectedTotal() != 0 {
		t.Fatalf("drain: %v", rep)
	}
	for i, d := range w.device.Rec.Got() {
		o, _ := governed.Parse(objs[i])
		if d.ObjectID != o.ID || d.Sender != key.DID().String() {
			t.Errorf("delivery %d: %s from %s, want %s from %s", i, d.ObjectID, d.Sender, o.ID, key.DID())
		}
	}
	// A later send reuses the session: no new handshake, one KeyPackage
	// taken in all.
	if _, err := w.client.Send(context.Background(), w.peer(), runtimetest.Object(t, key, "comms:message", t0, time.Hour, map[string]any{"n": 3})); err != nil {
		t.Fatal(err)
	}
	rep = w.drain(t, c)
	if rep.Handshake != 0 || rep.Accepted != 1 {
		t.Fatalf("second drain: %v", rep)
	}
}

// TestFetchKeyPackageChecks: the sender refuses a KeyPackage answer for
// another agent, and a KeyPackage not bound to the agent it expects.
func TestFetchKeyPackageChecks(t *testing.T) {
	alice, bob := runtimetest.Key(t, 1), runtimetest.Key(t, 2)
	bobKP := func() []byte {
		db, err := store.Open(filepath.Join(t.TempDir(), "b.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s, _ := session.New(session.Config{Key: bob})
		var kps [][]byte
		db.Update(func(tx *bolt.Tx) (err error) { kps, err = s.Refill(tx, 1); return err })
		return kps[0]
	}()
	tests := []struct {
		name   string
		answer any
		status int
		want   error
	}{
		{"answer for another DID", map[string]string{"did": bob.DID().String(), "wire": base64.StdEncoding.EncodeToString(bobKP)}, 200, session.ErrIdentityMismatch},
		{"bob's KeyPackage under alice's DID", map[string]string{"did": alice.DID().String(), "wire": base64.StdEncoding.EncodeToString(bobKP)}, 200, session.ErrIdentityMismatch},
		{"empty pool", map[string]string{"error": "no_key_package"}, 503, &sender.HTTPError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				rw.WriteHeader(tt.status)
				json.NewEncoder(rw).Encode(tt.answer)
			}))
			defer srv.Close()
			c := &sender.Client{Key: alice}
			_, err := c.FetchKeyPackage(context.Background(), sender.Peer{DID: alice.DID(), URL: srv.URL})
			var he *sender.HTTPError
			if want, ok := tt.want.(*sender.HTTPError); ok && want != nil {
				if !errors.As(err, &he) || he.Status != tt.status {
					t.Fatalf("FetchKeyPackage = %v, want an HTTPError %d", err, tt.status)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("FetchKeyPackage = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestEstablishFailureDropsSession: a handshake that cannot be delivered
// leaves no session behind, and the next send establishes a new one.
func TestEstablishFailureDropsSession(t *testing.T) {
	w := newWorld(t)
	c := w.publish(t)
	bad := *w.client
	bad.HTTP = &http.Client{Transport: failPost{}}
	obj := runtimetest.Object(t, w.client.Key, "comms:message", t0, time.Hour, nil)
	if _, err := bad.Send(context.Background(), w.peer(), obj); !errors.Is(err, errNetwork) {
		t.Fatalf("Send over a failing network = %v, want %v", err, errNetwork)
	}
	w.client.DB.View(func(tx *bolt.Tx) error {
		if _, err := w.client.Sessions.PairGroup(tx, w.dev.DID()); !errors.Is(err, session.ErrNoSession) {
			t.Errorf("PairGroup after a failed establishment = %v, want ErrNoSession", err)
		}
		return nil
	})
	if _, err := w.client.Send(context.Background(), w.peer(), obj); err != nil {
		t.Fatal(err)
	}
	if rep := w.drain(t, c); rep.Handshake != 1 || rep.Accepted != 1 {
		t.Fatalf("drain: %v", rep)
	}
}

var errNetwork = errors.New("network down")

// failPost fails every POST and passes other requests on.
type failPost struct{}

func (failPost) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost {
		return nil, errNetwork
	}
	return http.DefaultTransport.RoundTrip(r)
}
