package mqttconn_test

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session/state"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/mqttsession"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/login"
	"github.com/torpor-dev/torpor/transport/mqtt/mqttconn"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// start is the fake clocks' first instant.
var start = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// wait bounds every wait for the broker or the Manager: real time, as
// waits for peers are (package clock).
const wait = 20 * time.Second

// peer is one Manager and what it reported, each on a channel.
type peer struct {
	m       *mqttconn.Manager
	started chan struct{} // closed once m is set
	ups     chan *paho.Connack
	downs   chan struct{}
	errs    chan error
	subs    chan error // one per connection when it subscribes
	msgs    chan *paho.Publish
	seen    map[string]bool // the payloads expect received
}

// connect starts a Manager for id with key on brokerURL (also the token's
// audience), subscribing at QoS 1 to topics on every connection, as
// transport/mqtt's Client does. mut adjusts the configuration.
func connect(t *testing.T, brokerURL string, key *did.PrivateKey, id string, topics []string, mut func(*mqttconn.Config)) *peer {
	t.Helper()
	u, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{started: make(chan struct{}), ups: make(chan *paho.Connack, 16), downs: make(chan struct{}, 16),
		errs: make(chan error, 256), subs: make(chan error, 16), msgs: make(chan *paho.Publish, 256), seen: map[string]bool{}}
	cfg := mqttconn.Config{Server: u, Connect: mqttconn.Connect{
		KeepAlive:  30,
		CleanStart: true,
		Packet: func(cp *paho.Connect) (*paho.Connect, error) {
			return cp, login.Authenticate(cp, key, brokerURL, time.Now(), nil)
		},
	},
		Hooks: mqttconn.Hooks{
			OnConnectionUp: func(ca *paho.Connack) {
				p.ups <- ca
				if len(topics) > 0 {
					go p.subscribe(topics)
				}
			},
			OnConnectionDown: func() { p.downs <- struct{}{} },
			OnConnectError: func(err error) {
				select {
				case p.errs <- err:
				default:
				}
			},
		},
		Client: paho.ClientConfig{ClientID: id, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) { p.msgs <- pr.Packet; return true, nil }}},
	}
	if mut != nil {
		mut(&cfg)
	}
	if p.m, err = mqttconn.Start(cfg); err != nil {
		t.Fatal(err)
	}
	close(p.started)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		p.m.Disconnect(ctx)
	})
	return p
}

func (p *peer) subscribe(topics []string) {
	<-p.started
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s := &paho.Subscribe{}
	for _, tp := range topics {
		s.Subscriptions = append(s.Subscriptions, paho.SubscribeOptions{Topic: tp, QoS: 1})
	}
	_, err := p.m.Subscribe(ctx, s)
	p.subs <- err
}

// recv waits for the next value on ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// up waits for the next connection and its subscription.
func (p *peer) up(t *testing.T) *paho.Connack {
	t.Helper()
	ca := recv(t, p.ups, "a connection")
	if err := recv(t, p.subs, "the subscription"); err != nil {
		t.Fatalf("subscribing: %v", err)
	}
	return ca
}

// expect waits for the messages with payloads want, in that order,
// skipping redeliveries of messages received before (QoS 1 is at least
// once: a message whose PUBACK a dropped connection lost comes again).
func (p *peer) expect(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		m := recv(t, p.msgs, "message "+w)
		for p.seen[string(m.Payload)] && string(m.Payload) != w {
			m = recv(t, p.msgs, "message "+w)
		}
		if string(m.Payload) != w {
			t.Fatalf("received %q on %s, want %q", m.Payload, m.Topic, w)
		}
		p.seen[w] = true
	}
}

// fleet is a device and an operator on an embedded broker (mochi, as
// torpor-relay runs it, with its sessions in bbolt).
type fleet struct {
	b      *mqtttest.Embedded
	topics mqtt.Topics
	dev    *did.PrivateKey
	op     *did.PrivateKey
}

func newFleet(t *testing.T) *fleet {
	f := &fleet{b: mqtttest.StartEmbedded(t, nil), topics: mqtt.Topics{Device: "dev-1"}, dev: didtest.New(t), op: didtest.New(t)}
	f.b.AddOperator(f.op.DID())
	return f
}

// operator connects an operator that publishes commands.
func (f *fleet) operator(t *testing.T) *peer {
	return connect(t, f.b.URL(), f.op, "op-"+t.Name(), nil, nil)
}

// TestReconnectResumesTheSession stops the broker under a connected
// device: the Manager reports the connection down, refuses publications,
// waits its backoff on the injected clock, and reconnects without Clean
// Start once the broker is back; the broker resumed the session, so the
// command published while the device was away arrives, and so do later
// ones.
func TestReconnectResumesTheSession(t *testing.T) {
	f := newFleet(t)
	clk := clocktest.New(start)
	var pause backoff
	dev := connect(t, f.b.URL(), f.dev, "dev-1", []string{f.topics.Command()}, func(c *mqttconn.Config) {
		c.Connect.SessionExpiry, c.Backoff, c.Clock = 3600, pause.wait, clk
	})
	if ca := dev.up(t); ca.SessionPresent {
		t.Fatal("the first connection (Clean Start) resumed a session")
	}
	waiting := clk.TimerCreated()
	pause.set(time.Minute)
	f.b.Stop(t)
	recv(t, dev.downs, "the connection to end")
	if _, err := dev.m.Publish(context.Background(), &paho.Publish{Topic: f.topics.Reply(), QoS: 1}); !errors.Is(err, mqttconn.ErrConnectionDown) {
		t.Fatalf("Publish while down = %v, want ErrConnectionDown", err)
	}
	recv(t, waiting, "the backoff")
	f.b.Restart(t)
	w := mqtttest.NewWitness(t, f.b, f.topics.Command())
	op := f.operator(t)
	publishCommand(t, op, f.topics.Command(), "while-away")
	w.Await(t, "while-away")
	select {
	case ca := <-dev.ups:
		t.Fatalf("reconnected (%v) before the backoff passed on the clock", ca)
	default:
	}
	clk.Advance(time.Minute)
	if ca := dev.up(t); !ca.SessionPresent {
		t.Fatal("the reconnection did not resume the session (Clean Start sent again?)")
	}
	dev.expect(t, "while-away")
	publishCommand(t, op, f.topics.Command(), "after")
	dev.expect(t, "after")
}

// backoff is a Config.Backoff that waits the same before every attempt,
// the first included, from set on. A test that stops the broker sets it
// first: mochi, while it closes, may accept a connection it never serves,
// and an attempt caught so would wait out its Connect.Timeout.
type backoff struct{ d atomic.Int64 }

func (b *backoff) set(d time.Duration)    { b.d.Store(int64(d)) }
func (b *backoff) wait(int) time.Duration { return time.Duration(b.d.Load()) }

// publishCommand publishes payload with itself as correlation data, which
// the Witness records.
func publishCommand(t *testing.T, op *peer, topic, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := op.m.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := op.m.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: []byte(payload),
		Properties: &paho.PublishProperties{CorrelationData: []byte(payload)}})
	if err != nil || r.ReasonCode >= 0x80 {
		t.Fatalf("publishing %q: %v %v", payload, r, err)
	}
}

// TestReconnectsAfterTheNetworkDrops cuts the network under a connected
// device: the broker publishes its will (no DISCONNECT came), the Manager
// reports the connection down and reconnects after its backoff on the
// injected clock, calls OnConnectionUp again (where transport/mqtt's Client
// subscribes again), and commands flow. On the wire, each CONNECT carries
// the configured settings and Clean Start on the first connection only,
// and Disconnect ends the last connection with a DISCONNECT.
func TestReconnectsAfterTheNetworkDrops(t *testing.T) {
	f := newFleet(t)
	px := mqtttest.StartProxy(t, strings.TrimPrefix(f.b.URL(), "mqtt://"))
	f.b.AddAudience(t, px.URL())
	obs := didtest.New(t)
	f.b.AddObserver(obs.DID())
	watcher := connect(t, f.b.URL(), obs, "observer", []string{f.topics.Status()}, nil)
	watcher.up(t)
	clk := clocktest.New(start)
	dev := connect(t, px.URL(), f.dev, "dev-1", []string{f.topics.Command()}, func(c *mqttconn.Config) {
		c.Connect.SessionExpiry, c.Backoff, c.Clock = 3600, mqttconn.ConstantBackoff(time.Minute), clk
		auth := c.Connect.Packet
		c.Connect.Packet = func(cp *paho.Connect) (*paho.Connect, error) {
			cp.WillMessage = &paho.WillMessage{Topic: f.topics.Status(), QoS: 1, Payload: []byte("lost")}
			cp.WillProperties = &paho.WillProperties{}
			return auth(cp)
		}
	})
	dev.up(t)
	op := f.operator(t)
	publishCommand(t, op, f.topics.Command(), "first")
	dev.expect(t, "first")
	backoff := clk.TimerCreated()
	px.Cut()
	recv(t, dev.downs, "the connection to end")
	recv(t, backoff, "the backoff")
	watcher.expect(t, "lost")
	px.Restore()
	clk.Advance(time.Minute)
	dev.up(t)
	publishCommand(t, op, f.topics.Command(), "second")
	dev.expect(t, "second")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := dev.m.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	checkWire(t, sentUntilDisconnect(px))
}

// sentUntilDisconnect returns what the proxy forwarded once it has
// forwarded a DISCONNECT last, or after the wait: the proxy copies on
// goroutines of its own.
func sentUntilDisconnect(px *mqtttest.Proxy) [][]byte {
	for deadline := time.Now().Add(wait); ; runtime.Gosched() {
		sent := px.Sent()
		if n := len(sent); n > 0 && endsWithDisconnect(sent[n-1]) || time.Now().After(deadline) {
			return sent
		}
	}
}

// endsWithDisconnect tells whether b ends with a normal DISCONNECT, with
// or without its reason code and properties (MQTT 5.0 Section 3.14.2).
func endsWithDisconnect(b []byte) bool {
	return bytes.HasSuffix(b, []byte{packets.DISCONNECT << 4, 0}) || bytes.HasSuffix(b, []byte{packets.DISCONNECT << 4, 2, 0, 0})
}

// checkWire checks the CONNECT opening each connection, and the DISCONNECT
// closing the last one (MQTT 5.0 Section 3.14).
func checkWire(t *testing.T, sent [][]byte) {
	t.Helper()
	if len(sent) != 2 {
		t.Fatalf("%d connections through the proxy, want 2", len(sent))
	}
	for i, clean := range []bool{true, false} {
		cp := connectOf(t, sent[i])
		if cp.CleanStart != clean || cp.KeepAlive != 30 || cp.ClientID != "dev-1" {
			t.Errorf("CONNECT %d: Clean Start %v, Keep Alive %d, client id %q; want %v, 30, dev-1", i, cp.CleanStart, cp.KeepAlive, cp.ClientID, clean)
		}
		if cp.Properties == nil || cp.Properties.SessionExpiryInterval == nil || *cp.Properties.SessionExpiryInterval != 3600 {
			t.Errorf("CONNECT %d: Session Expiry Interval %+v, want 3600", i, cp.Properties)
		}
	}
	last := sent[1]
	if !endsWithDisconnect(last) {
		t.Errorf("the last connection did not end with a normal DISCONNECT: ends % x", last[max(0, len(last)-8):])
	}
}

// connectOf decodes the CONNECT a client sent first on a connection.
func connectOf(t *testing.T, sent []byte) *packets.Connect {
	t.Helper()
	p, err := packets.ReadPacket(bytes.NewReader(sent))
	if err != nil {
		t.Fatal(err)
	}
	cp, ok := p.Content.(*packets.Connect)
	if !ok {
		t.Fatalf("the first packet is a %T, not a CONNECT", p.Content)
	}
	return cp
}

// TestQueuedWhileDownIsPublishedAfterReconnect queues replies in the
// agent's bbolt queue (store/mqttsession) while the broker is down: they
// stay queued, and once the Manager reconnects they go out in order, the
// broker acknowledges them, and the queue and the session empty.
func TestQueuedWhileDownIsPublishedAfterReconnect(t *testing.T) {
	f := newFleet(t)
	st, sessions, q := openSession(t)
	clk := clocktest.New(start)
	var pause backoff
	dev := connect(t, f.b.URL(), f.dev, "dev-1", []string{f.topics.Command()}, func(c *mqttconn.Config) {
		c.Connect.SessionExpiry, c.Backoff, c.Clock, c.Queue, c.Client.Session = 3600, pause.wait, clk, q, st
	})
	dev.up(t)
	waiting := clk.TimerCreated()
	pause.set(time.Minute)
	f.b.Stop(t)
	recv(t, dev.downs, "the connection to end")
	want := []string{"r1", "r2", "r3"}
	for _, r := range want {
		var b bytes.Buffer
		(&paho.Publish{Topic: f.topics.Reply(), QoS: 1, Payload: []byte(r)}).Packet().WriteTo(&b)
		if err := q.Enqueue(&b); err != nil {
			t.Fatal(err)
		}
	}
	recv(t, waiting, "the backoff")
	select {
	case <-q.WaitForEmpty():
		t.Fatal("the queue emptied while no connection was up")
	default:
	}
	f.b.Restart(t)
	obs := didtest.New(t)
	f.b.AddObserver(obs.DID())
	watcher := connect(t, f.b.URL(), obs, "observer", []string{f.topics.Reply()}, nil)
	watcher.up(t)
	clk.Advance(time.Minute)
	recv(t, dev.ups, "the reconnection")
	watcher.expect(t, want...)
	recv(t, q.WaitForEmpty(), "the queue to empty")
	recv(t, sessions.WaitForEmpty(), "the broker's acknowledgements")
}

// openSession opens the agent's MQTT session state and outbound queue in
// a bbolt file, as transport/mqtt's Client does.
func openSession(t *testing.T) (*state.State, *mqttsession.Store, *mqttsession.Queue) {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "agent.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, sessions, err := mqttsession.NewState(db, "mqtt-session")
	if err != nil {
		t.Fatal(err)
	}
	q, err := mqttsession.OpenQueue(db, "mqtt-outbox", nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, sessions, q
}

// TestUnreadableQueueEntryDoesNotBlockTheQueue puts an entry that is no
// MQTT packet ahead of a reply in the queue: the Manager quarantines it
// and publishes the reply.
func TestUnreadableQueueEntryDoesNotBlockTheQueue(t *testing.T) {
	f := newFleet(t)
	st, _, q := openSession(t)
	var b bytes.Buffer
	(&paho.Publish{Topic: f.topics.Reply(), QoS: 1, Payload: []byte("r1")}).Packet().WriteTo(&b)
	for _, e := range [][]byte{{0xff, 0x00, 0x01}, b.Bytes()} {
		if err := q.Enqueue(bytes.NewReader(e)); err != nil {
			t.Fatal(err)
		}
	}
	obs := didtest.New(t)
	f.b.AddObserver(obs.DID())
	watcher := connect(t, f.b.URL(), obs, "observer", []string{f.topics.Reply()}, nil)
	watcher.up(t)
	dev := connect(t, f.b.URL(), f.dev, "dev-1", nil, func(c *mqttconn.Config) {
		c.Connect.SessionExpiry, c.Queue, c.Client.Session = 3600, q, st
	})
	recv(t, dev.ups, "the connection")
	watcher.expect(t, "r1")
	recv(t, q.WaitForEmpty(), "the queue to empty")
}
