package broker

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/bearer"
)

func TestBrokerRaisesMessageExpiryAndServes(t *testing.T) {
	op, dev := didtest.Key(t, 1), didtest.Key(t, 2)
	b := startBroker(t, Config{DataDir: t.TempDir(), Operators: []did.DID{op.DID()}})
	if got := b.MaxMessageExpiry(); got != 30*24*time.Hour {
		t.Errorf("MaxMessageExpiry = %v, want 720h (mochi's default is 24h)", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan *paho.Publish, 1)
	sub := mustConnect(t, ctx, b, dev, "device-1", false, func(p paho.PublishReceived) (bool, error) {
		got <- p.Packet
		return true, nil
	})
	mustSubscribe(t, ctx, sub, "torpor/v1/device-1/cmd")
	pub := mustConnect(t, ctx, b, op, "operator", true, nil)
	expiry := uint32(48 * 3600) // longer than mochi's default cap
	if _, err := pub.Publish(ctx, &paho.Publish{Topic: "torpor/v1/device-1/cmd", QoS: 1, Payload: []byte("wake"), Properties: &paho.PublishProperties{MessageExpiry: &expiry}}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if string(p.Payload) != "wake" {
			t.Errorf("payload %q", p.Payload)
		}
	case <-ctx.Done():
		t.Fatal("no message through the embedded broker")
	}
}

// startBroker starts a broker with cfg, on a free loopback port if cfg
// names no Listen address, until the test ends.
func startBroker(t *testing.T, cfg Config) *Broker {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// connect connects as a Torpor client does: user name the DID, password a
// token for the broker's URL (key nil: anonymous).
func connect(tb testing.TB, ctx context.Context, b *Broker, key *did.PrivateKey, id string, clean bool, onPub func(paho.PublishReceived) (bool, error)) (*paho.Client, error) {
	tb.Helper()
	cp := &paho.Connect{ClientID: id, CleanStart: clean, KeepAlive: 30}
	if key != nil {
		tok, err := bearer.Issue(key, b.URL(), time.Now(), time.Minute)
		if err != nil {
			tb.Fatal(err)
		}
		cp.Username, cp.UsernameFlag, cp.Password, cp.PasswordFlag = key.DID().String(), true, []byte(tok), true
	}
	return connectPacket(tb, ctx, b, cp, onPub)
}

func connectPacket(tb testing.TB, ctx context.Context, b *Broker, cp *paho.Connect, onPub func(paho.PublishReceived) (bool, error)) (*paho.Client, error) {
	tb.Helper()
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		tb.Fatal(err)
	}
	cfg := paho.ClientConfig{Conn: conn, ClientID: cp.ClientID}
	if onPub != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){onPub}
	}
	if !cp.CleanStart {
		expiry := uint32(3600)
		cp.Properties = &paho.ConnectProperties{SessionExpiryInterval: &expiry}
	}
	c := paho.NewClient(cfg)
	if _, err := c.Connect(ctx, cp); err != nil {
		conn.Close()
		return nil, err
	}
	tb.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	return c, nil
}

func mustConnect(tb testing.TB, ctx context.Context, b *Broker, key *did.PrivateKey, id string, clean bool, onPub func(paho.PublishReceived) (bool, error)) *paho.Client {
	tb.Helper()
	c, err := connect(tb, ctx, b, key, id, clean, onPub)
	if err != nil {
		tb.Fatalf("connecting as %s: %v", id, err)
	}
	return c
}

func mustSubscribe(tb testing.TB, ctx context.Context, c *paho.Client, topic string) {
	tb.Helper()
	if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}}); err != nil {
		tb.Fatalf("subscribing to %s: %v", topic, err)
	}
}

// TestBrokerRestartDeliversQueuedCommands: commands queued for a sleeping
// device's persistent session survive a restart of the embedded broker, and
// the device can reconnect and receive them. mochi v2.7.9's bolt hook does
// not store the packet id of such in-flight messages; restored with id 0,
// they made mochi drop every connection of that client (see boltHook).
func TestBrokerRestartDeliversQueuedCommands(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	op, key := didtest.Key(t, 1), didtest.Key(t, 7)
	cfg := Config{Listen: "127.0.0.1:0", DataDir: dir, Operators: []did.DID{op.DID()}}
	b1, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dev := mustConnect(t, ctx, b1, key, "device-7", false, nil)
	mustSubscribe(t, ctx, dev, "torpor/v1/device-7/cmd")
	dev.Disconnect(&paho.Disconnect{})
	pub := mustConnect(t, ctx, b1, op, "operator", true, nil)
	for _, m := range []string{"one", "two", "three"} {
		if _, err := pub.Publish(ctx, &paho.Publish{Topic: "torpor/v1/device-7/cmd", QoS: 1, Payload: []byte(m)}); err != nil {
			t.Fatal(err)
		}
	}
	pub.Disconnect(&paho.Disconnect{})
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}

	cfg.Listen = b1.Addr()
	b2, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	got := make(chan string, 3)
	mustConnect(t, ctx, b2, key, "device-7", false, func(p paho.PublishReceived) (bool, error) {
		got <- string(p.Packet.Payload)
		return true, nil
	})
	seen := map[string]bool{}
	for len(seen) < 3 {
		select {
		case m := <-got:
			seen[m] = true
		case <-ctx.Done():
			t.Fatalf("after the broker restart the device received %v, want one, two and three", seen)
		}
	}
}

// TestBrokerRefusesUnauthenticated: anonymous clients, a user name without
// a token, a token of another DID, a token for another broker, an expired
// token and a made-up password are all refused at CONNECT.
func TestBrokerRefusesUnauthenticated(t *testing.T) {
	b := startBroker(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k, other := didtest.Key(t, 3), didtest.Key(t, 4)
	tok := func(key *did.PrivateKey, aud string, at time.Time) []byte {
		s, err := bearer.Issue(key, aud, at, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(s)
	}
	cases := map[string]*paho.Connect{
		"anonymous":        {},
		"no password":      {Username: k.DID().String(), UsernameFlag: true},
		"made-up password": {Username: k.DID().String(), UsernameFlag: true, Password: []byte("hunter2"), PasswordFlag: true},
		"another DID's":    {Username: k.DID().String(), UsernameFlag: true, Password: tok(other, b.URL(), time.Now()), PasswordFlag: true},
		"another audience": {Username: k.DID().String(), UsernameFlag: true, Password: tok(k, "mqtt://elsewhere:1883", time.Now()), PasswordFlag: true},
		"expired":          {Username: k.DID().String(), UsernameFlag: true, Password: tok(k, b.URL(), time.Now().Add(-time.Hour)), PasswordFlag: true},
		"user not a did":   {Username: "admin", UsernameFlag: true, Password: tok(k, b.URL(), time.Now()), PasswordFlag: true},
		"bad client id":    {ClientID: "a/b", Username: k.DID().String(), UsernameFlag: true, Password: tok(k, b.URL(), time.Now()), PasswordFlag: true},
	}
	for name, cp := range cases {
		if cp.ClientID == "" {
			cp.ClientID = "dev-x"
		}
		cp.CleanStart, cp.KeepAlive = true, 30
		if _, err := connectPacket(t, ctx, b, cp, nil); err == nil {
			t.Errorf("%s: connected, want refused", name)
		}
	}
	if _, err := connect(t, ctx, b, k, "dev-x", true, nil); err != nil {
		t.Errorf("a valid token: %v", err)
	}
}

// TestBrokerBindsNamesToDIDs: the first authenticated connection pins a
// device name to its DID, also across a restart; another DID under that
// name is refused and so cannot resume the device's session and take its
// queued commands. Config.Enrollment fixes the names.
func TestBrokerBindsNamesToDIDs(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dev, thief := didtest.Key(t, 5), didtest.Key(t, 6)
	b, err := Start(Config{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	mustConnect(t, ctx, b, dev, "pump-1", false, nil).Disconnect(&paho.Disconnect{})
	if _, err := connect(t, ctx, b, thief, "pump-1", false, nil); err == nil {
		t.Error("another DID resumed pump-1's session")
	}
	b.Close()
	b, err = Start(Config{Listen: b.Addr(), DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, ctx, b, thief, "pump-1", false, nil); err == nil {
		t.Error("after a restart, another DID resumed pump-1's session")
	}
	mustConnect(t, ctx, b, dev, "pump-1", false, nil)
	if _, err := connect(t, ctx, b, dev, "pump-9", true, nil); err == nil {
		t.Error("a DID took a second device name")
	}
	b.Close()

	b, err = Start(Config{Listen: "127.0.0.1:0", Enrollment: Enrollment{Closed: true, Devices: map[string]did.DID{"pump-2": dev.DID()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := connect(t, ctx, b, thief, "pump-3", true, nil); err == nil {
		t.Error("enrolment closed, yet an unknown name connected")
	}
	if _, err := connect(t, ctx, b, thief, "pump-2", true, nil); err == nil {
		t.Error("a DID connected under a name Config.Devices gives to another")
	}
	mustConnect(t, ctx, b, dev, "pump-2", true, nil)
	r, _ := openRegistry(filepath.Join(dir, "mqtt-devices.db"), nil, false, b.auth.log)
	if d, ok, err := r.lookup("pump-1"); err != nil || !ok || d != dev.DID() {
		t.Errorf("registry pin of pump-1 = %v %v %v, want %s", d, ok, err, dev.DID())
	}
	r.close()
}

// TestBrokerACL: a device subscribes only to its own command and sync
// topics and publishes only on its own; only an operator publishes
// commands and reads statuses; a will on another's topic is refused.
func TestBrokerACL(t *testing.T) {
	op, a, c := didtest.Key(t, 1), didtest.Key(t, 2), didtest.Key(t, 3)
	b := startBroker(t, Config{Operators: []did.DID{op.DID()}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mustConnect(t, ctx, b, a, "dev-a", true, nil)
	for _, tc := range []struct {
		key          *did.PrivateKey
		id, topic    string
		write, allow bool
	}{
		{a, "dev-a", "torpor/v1/dev-a/cmd", false, true},
		{a, "dev-a", "torpor/v1/dev-a/sync", false, true},
		{a, "dev-a", "torpor/v1/dev-a/status", true, true},
		{a, "dev-a", "torpor/v1/dev-a/reply", true, true},
		{a, "dev-a", "torpor/v1/dev-a/cmd", true, false},
		{c, "dev-c", "torpor/v1/dev-a/cmd", false, false},
		{c, "dev-c", "torpor/v1/+/cmd", false, false},
		{c, "dev-c", "torpor/v1/dev-a/status", true, false},
		{c, "dev-c", "torpor/v1/dev-a/status", false, false},
		{c, "dev-c", "#", false, false},
		{c, "dev-c", "$SYS/#", false, false},
		{op, "torporctl-1", "torpor/v1/dev-a/cmd", true, true},
		{op, "torporctl-1", "torpor/v1/+/status", false, true},
		{op, "torporctl-1", "torpor/v1/dev-a/reply", false, true},
		{op, "torporctl-1", "torpor/v1/dev-a/cmd", false, false},
		{op, "torporctl-1", "torpor/v1/dev-a/status", true, false},
	} {
		if got := b.auth.allowed(tc.id, tc.key.DID(), tc.topic, tc.write); got != tc.allow {
			t.Errorf("%s publish=%v %s: allowed %v, want %v", tc.id, tc.write, tc.topic, got, tc.allow)
		}
	}
	if _, err := connect(t, ctx, b, op, "dev-a", true, nil); err == nil {
		t.Error("an operator connected under a device's name")
	}
	cp := &paho.Connect{ClientID: "dev-c", CleanStart: true, KeepAlive: 30,
		WillMessage: &paho.WillMessage{Topic: "torpor/v1/dev-a/status", Payload: []byte("forged"), Retain: true}}
	tok, _ := bearer.Issue(c, b.URL(), time.Now(), time.Minute)
	cp.Username, cp.UsernameFlag, cp.Password, cp.PasswordFlag = c.DID().String(), true, []byte(tok), true
	if _, err := connectPacket(t, ctx, b, cp, nil); err == nil {
		t.Error("a will on another device's status topic was accepted")
	}
}

// TestBrokerRefusesLargePackets: a PUBLISH over MaxPacketSize ends the
// publisher's connection and reaches no subscriber.
func TestBrokerRefusesLargePackets(t *testing.T) {
	op, dev := didtest.Key(t, 1), didtest.Key(t, 2)
	b := startBroker(t, Config{Operators: []did.DID{op.DID()}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan int, 4)
	sub := mustConnect(t, ctx, b, dev, "dev-1", true, func(p paho.PublishReceived) (bool, error) {
		got <- len(p.Packet.Payload)
		return true, nil
	})
	mustSubscribe(t, ctx, sub, "torpor/v1/dev-1/cmd")
	pub := mustConnect(t, ctx, b, op, "torporctl-1", true, nil)
	big := bytes.Repeat([]byte("x"), 5<<20)
	bctx, bcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := pub.Publish(bctx, &paho.Publish{Topic: "torpor/v1/dev-1/cmd", QoS: 1, Payload: big})
	bcancel()
	if err == nil {
		t.Error("a 5 MiB PUBLISH was acknowledged")
	}
	pub = mustConnect(t, ctx, b, op, "torporctl-2", true, nil)
	if _, err := pub.Publish(ctx, &paho.Publish{Topic: "torpor/v1/dev-1/cmd", QoS: 1, Payload: []byte("small")}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n != len("small") {
			t.Errorf("the device received %d bytes, want the small command only", n)
		}
	case <-ctx.Done():
		t.Fatal("the small command did not arrive")
	}
}

// TestBrokerKeyHandover: a device that rotated its key connects under its
// name with the new DID when it presents the handover its old key signed;
// afterwards the old key is refused. A handover signed by another key, or
// for another name, moves nothing.
func TestBrokerKeyHandover(t *testing.T) {
	old, next, stranger := didtest.Key(t, 1), didtest.Key(t, 2), didtest.Key(t, 3)
	b := startBroker(t, Config{DataDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mustConnect(t, ctx, b, old, "pump-1", true, nil).Disconnect(&paho.Disconnect{})
	withHandover := func(signer *did.PrivateKey, from, to did.DID, name string) *paho.Connect {
		o, err := governed.Sign(signer, governed.Template{IssuedAt: time.Now(), Purpose: HandoverPurpose,
			Semantic: governed.Semantic{Schema: "https://torpor.dev/schemas/key-handover/v1"},
			Payload:  map[string]string{"old": from.String(), "new": to.String(), "device": name}})
		if err != nil {
			t.Fatal(err)
		}
		j, _ := o.MarshalJSON()
		tok, _ := bearer.Issue(next, b.URL(), time.Now(), time.Minute)
		cp := &paho.Connect{ClientID: "pump-1", CleanStart: true, KeepAlive: 30, Username: next.DID().String(), UsernameFlag: true,
			Password: []byte(tok), PasswordFlag: true, Properties: &paho.ConnectProperties{}}
		cp.Properties.User.Add(HandoverProperty, string(j))
		return cp
	}
	for name, cp := range map[string]*paho.Connect{
		"no handover":          withToken(t, b, next, "pump-1"),
		"signed by a stranger": withHandover(stranger, old.DID(), next.DID(), "pump-1"),
		"for another name":     withHandover(old, old.DID(), next.DID(), "pump-2"),
	} {
		if _, err := connectPacket(t, ctx, b, cp, nil); err == nil {
			t.Errorf("%s: the new key took the name", name)
		}
	}
	if _, err := connectPacket(t, ctx, b, withHandover(old, old.DID(), next.DID(), "pump-1"), nil); err != nil {
		t.Fatalf("with the old key's handover: %v", err)
	}
	if _, err := connect(t, ctx, b, old, "pump-1", true, nil); err == nil {
		t.Error("the old key still connects under the name")
	}
}

func withToken(t *testing.T, b *Broker, k *did.PrivateKey, id string) *paho.Connect {
	tok, _ := bearer.Issue(k, b.URL(), time.Now(), time.Minute)
	return &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30, Username: k.DID().String(), UsernameFlag: true,
		Password: []byte(tok), PasswordFlag: true}
}
