package broker

import (
	"context"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
)

// tenantMap is a hosted relay's tenancy held in memory: the device DIDs
// of each tenant, by the tenant's view. (torpor-relay gives the broker
// its tenants ledger; test/tenants runs that.)
type tenantMap map[did.DID]*TenantView

func (m tenantMap) DeviceTenant(dev did.DID) (TenantView, bool, error) {
	if t := m[dev]; t != nil {
		return *t, true, nil
	}
	return TenantView{}, false, nil
}

func (m tenantMap) IsTenantOperator(d did.DID) (bool, error) {
	for _, t := range m {
		for _, op := range t.Operators {
			if op == d {
				return true, nil
			}
		}
	}
	return false, nil
}

// scopeWorld is a broker with tenants a (devices dev-a, dev-a2, operator
// opA), b (dev-b, opB) and c (dev-c, opC, which lets the host see its
// devices), dev-n in no tenant, and the host's operator and observer.
type scopeWorld struct {
	b                             *Broker
	opA, opB, opC, host, observer *did.PrivateKey
	devA, devA2, devB, devC, devN *did.PrivateKey
}

func newScopeWorld(t *testing.T) *scopeWorld {
	w := &scopeWorld{opA: didtest.Key(t, 1), opB: didtest.Key(t, 2), opC: didtest.Key(t, 3), host: didtest.Key(t, 4), observer: didtest.Key(t, 5),
		devA: didtest.Key(t, 10), devA2: didtest.Key(t, 11), devB: didtest.Key(t, 12), devC: didtest.Key(t, 13), devN: didtest.Key(t, 14)}
	a := &TenantView{Operators: []did.DID{w.opA.DID()}}
	m := tenantMap{w.devA.DID(): a, w.devA2.DID(): a, w.devB.DID(): {Operators: []did.DID{w.opB.DID()}},
		w.devC.DID(): {Operators: []did.DID{w.opC.DID()}, HostSeesDevices: true}}
	var err error
	w.b, err = Start(Config{Listen: "127.0.0.1:0", Operators: []did.DID{w.host.DID()}, Observers: []did.DID{w.observer.DID()}, Enrollment: Enrollment{Tenants: m}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.b.Close() })
	return w
}

// TestBrokerScopesOperatorsByTenant: with a Scope, a tenant's operator
// publishes commands on and reads the topics of its tenant's devices
// only; the host's operator and observer read a tenant's device's topics
// only when its owner lets the host see them, and never publish on them;
// a device in no tenant is the host's alone; devices keep to their own
// topics.
func TestBrokerScopesOperatorsByTenant(t *testing.T) {
	w := newScopeWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, k := range map[string]*did.PrivateKey{"dev-a": w.devA, "dev-a2": w.devA2, "dev-b": w.devB, "dev-c": w.devC, "dev-n": w.devN} {
		mustConnect(t, ctx, w.b, k, name, true, nil) // binds the name to the DID
	}
	for _, tc := range []struct {
		key          *did.PrivateKey
		id, topic    string
		write, allow bool
	}{
		{w.opA, "op-a", "torpor/v1/dev-a/cmd", true, true},
		{w.opA, "op-a", "torpor/v1/dev-a/status", false, true},
		{w.opA, "op-a", "torpor/v1/dev-a2/reply", false, true},
		{w.opA, "op-a", "torpor/v1/+/status", false, true}, // deliveries are checked one by one
		{w.opA, "op-a", "torpor/v1/dev-b/cmd", true, false},
		{w.opA, "op-a", "torpor/v1/dev-b/status", false, false},
		{w.opA, "op-a", "torpor/v1/dev-n/cmd", true, false},
		{w.opA, "op-a", "torpor/v1/dev-n/event", false, false},
		{w.opA, "op-a", "torpor/v1/dev-unbound/cmd", true, false},
		{w.opB, "op-b", "torpor/v1/dev-b/cmd", true, true},
		{w.opB, "op-b", "torpor/v1/dev-a/cmd", true, false},
		{w.opB, "op-b", "torpor/v1/dev-a/event", false, false},
		{w.host, "host", "torpor/v1/dev-n/cmd", true, true},
		{w.host, "host", "torpor/v1/dev-n/status", false, true},
		{w.host, "host", "torpor/v1/dev-a/cmd", true, false},
		{w.host, "host", "torpor/v1/dev-a/status", false, false},
		{w.host, "host", "torpor/v1/dev-c/status", false, true}, // c's owner lets the host see
		{w.host, "host", "torpor/v1/dev-c/cmd", true, false},
		{w.observer, "obs", "torpor/v1/dev-a/cmd", false, false},
		{w.observer, "obs", "torpor/v1/dev-c/cmd", false, true},
		{w.observer, "obs", "torpor/v1/dev-n/cmd", false, true},
		{w.devA, "dev-a", "torpor/v1/dev-a/cmd", false, true},
		{w.devA, "dev-a", "torpor/v1/dev-a/status", true, true},
		{w.devA, "dev-a", "torpor/v1/dev-a2/cmd", false, false},
	} {
		if got := w.b.auth.allowed(tc.id, tc.key.DID(), tc.topic, tc.write); got != tc.allow {
			t.Errorf("%s publish=%v %s: allowed %v, want %v", tc.id, tc.write, tc.topic, got, tc.allow)
		}
	}
	if _, err := connect(t, ctx, w.b, w.opA, "dev-b", true, nil); err == nil {
		t.Error("a tenant's operator connected under a device's name")
	}
}

// TestBrokerScopedOverTheWire: real MQTT clients. a's operator's command
// reaches a's device and its command on b's device is refused; its
// subscription to b's status is refused; through '+' it receives a's
// devices' statuses and none of b's, and the host's operator none of
// a's (each checked on the delivery's own topic).
func TestBrokerScopedOverTheWire(t *testing.T) {
	w := newScopeWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmds := make(chan string, 4)
	devA := mustConnect(t, ctx, w.b, w.devA, "dev-a", true, func(p paho.PublishReceived) (bool, error) {
		cmds <- p.Packet.Topic
		return true, nil
	})
	mustSubscribe(t, ctx, devA, "torpor/v1/dev-a/cmd")
	devB := mustConnect(t, ctx, w.b, w.devB, "dev-b", true, nil)
	devN := mustConnect(t, ctx, w.b, w.devN, "dev-n", true, nil)
	opA := mustConnect(t, ctx, w.b, w.opA, "op-a", true, nil)
	if _, err := opA.Publish(ctx, &paho.Publish{Topic: "torpor/v1/dev-b/cmd", QoS: 1, Payload: []byte("halt")}); err == nil {
		t.Error("a's operator published a command to b's device")
	}
	if _, err := opA.Publish(ctx, &paho.Publish{Topic: "torpor/v1/dev-a/cmd", QoS: 1, Payload: []byte("halt")}); err != nil {
		t.Fatalf("a's operator's command to a's device: %v", err)
	}
	if got := <-cmds; got != "torpor/v1/dev-a/cmd" {
		t.Errorf("a's device received on %s", got)
	}
	if _, err := opA.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "torpor/v1/dev-b/status", QoS: 1}}}); err == nil {
		t.Error("a's operator subscribed to b's device's status")
	}
	gotA, gotHost := statusSink(t, ctx, w, w.opA, "op-a2"), statusSink(t, ctx, w, w.host, "host")
	// b's status, then a second one: once the second is acknowledged the
	// first has gone to every subscriber it goes to (one connection's
	// packets are handled in order), so that a's and the host's
	// deliveries after it show whether it reached them.
	for _, c := range []*paho.Client{devB, devB, devN} {
		if _, err := c.Publish(ctx, &paho.Publish{Topic: "torpor/v1/" + clientName(c) + "/status", QoS: 1, Payload: []byte("up")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*paho.Client{devA, devA, devN} {
		if _, err := c.Publish(ctx, &paho.Publish{Topic: "torpor/v1/" + clientName(c) + "/status", QoS: 1, Payload: []byte("up")}); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-gotA; got != "torpor/v1/dev-a/status" {
		t.Errorf("a's operator's first status through '+' is %s, want a's device's only", got)
	}
	// dev-n's two statuses, with a's two between them: the second of
	// dev-n's is the host's next delivery only if a's went nowhere near it.
	for i := range 2 {
		if got := <-gotHost; got != "torpor/v1/dev-n/status" {
			t.Errorf("the host's status %d through '+' is %s, want the device in no tenant's", i+1, got)
		}
	}
}

// statusSink connects k as id, subscribes to every device's status and
// returns the topics of what it receives.
func statusSink(t *testing.T, ctx context.Context, w *scopeWorld, k *did.PrivateKey, id string) <-chan string {
	got := make(chan string, 8)
	c := mustConnect(t, ctx, w.b, k, id, true, func(p paho.PublishReceived) (bool, error) {
		got <- p.Packet.Topic
		return true, nil
	})
	mustSubscribe(t, ctx, c, "torpor/v1/+/status")
	return got
}

func clientName(c *paho.Client) string { return c.ClientID() }
