package relay

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/link"
)

var sendBody = sendV1

// admitAs posts the admission of agent with a token of caller (nil: none).
func (h *harness) admitAs(tb testing.TB, agent did.DID, caller *did.PrivateKey) resp {
	tb.Helper()
	return h.asOperator(tb, "POST", "/operator/agents/"+agent.String()+"/admit", caller, nil)
}

// TestProbationUntilAdmitted: a new device gets probation's ceiling in its
// hello and its queue bounds; only an operator can admit it (401 without
// a token, 403 for another DID); admitted, its next link gets the relay's
// ceiling, also after a restart of the store.
func TestProbationUntilAdmitted(t *testing.T) {
	op := didtest.Key(t, 40)
	h := newHarness(t, func(c *Config) { c.Access.Operators = []did.DID{op.DID()} })
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	c := h.device(t, dev, "sleep", deviceOpts{})
	if got, want := c.Hello(), DefaultProbation().Bounds; got.MaxMessages != want.MaxMessages || got.MaxBytes != want.MaxBytes || got.MaxPerPeer != want.MaxPerPeer {
		t.Errorf("hello of a new device: %+v, want probation's %+v", got, want)
	}
	c.Close()
	<-h.relay.Link().Gone(dev.DID().String())
	for i := range 6 {
		r := h.post(t, dev.DID(), alice, "1.0", sendBody)
		if want := map[bool]int{true: 429, false: 503}[i == 5]; r.status != want {
			t.Fatalf("send %d to a device on probation: %d %s, want %d (5 per sender)", i, r.status, r.body, want)
		}
	}
	if r := h.admitAs(t, dev.DID(), nil); r.status != 401 {
		t.Errorf("admit without a token: %d %s, want 401", r.status, r.body)
	}
	if r := h.admitAs(t, dev.DID(), alice); r.status != 403 || r.json["error"] != "not_operator" {
		t.Errorf("admit by a non-operator: %d %s, want 403 not_operator", r.status, r.body)
	}
	if ok, _ := h.states.Admitted(context.Background(), dev.DID().String()); ok {
		t.Fatal("admitted by a refused request")
	}
	linked := h.device(t, dev, "sleep", deviceOpts{})
	if r := h.admitAs(t, dev.DID(), op); r.status != 200 || r.json["admitted"] != true {
		t.Fatalf("admit by the operator: %d %s", r.status, r.body)
	}
	select {
	case <-h.relay.Link().Gone(dev.DID().String()): // dropped, so that it links again for the new ceiling
	case <-time.After(5 * time.Second): // a real-time bound on the link's close
		t.Fatal("the link on probation was not dropped at admission")
	}
	linked.Close()
	c2 := h.device(t, dev, "sleep", deviceOpts{})
	if got := c2.Hello(); got != h.relay.cfg.Limits.Bounds {
		t.Errorf("hello after admission: %+v, want the relay's %+v", got, h.relay.cfg.Limits.Bounds)
	}
	// A relay over the same store (a restart) knows the admission.
	h2 := &Relay{cfg: h.relay.cfg, adm: admission{known: map[string]bool{}}, log: h.relay.log}
	if !h2.admitted(context.Background(), dev.DID().String()) {
		t.Error("a fresh relay over the same store does not know the admission")
	}
}

// TestProbationRefusesLargeState: a device on probation may not publish
// more KeyPackages or a larger card and pulse than probation allows; the
// refusal says so and stores nothing; admitted, it may.
func TestProbationRefusesLargeState(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Access.Probation = DefaultProbation()
		c.Access.Probation.KeyPackages = 2
	})
	dev := didtest.Key(t, 1)
	c := h.device(t, dev, "always_on", deviceOpts{kps: [][]byte{kp(1), kp(2)}})
	_, err := c.Publish(context.Background(), h.state(t, dev, c.Hello(), "always_on", deviceOpts{kps: [][]byte{kp(3)}}))
	if err == nil || !strings.Contains(err.Error(), "on probation") {
		t.Fatalf("a third KeyPackage on probation: %v, want refused as on probation", err)
	}
	h.checkPool(t, dev.DID(), [][]byte{kp(1), kp(2)})
	big := append([]byte{0, 1, 0, 5}, make([]byte, 5000)...)
	_, err = c.Publish(context.Background(), h.state(t, dev, c.Hello(), "always_on", deviceOpts{kps: [][]byte{}, lastRes: big}))
	if err == nil || !strings.Contains(err.Error(), "on probation") || !strings.Contains(err.Error(), "4096") {
		t.Fatalf("a 5004-byte KeyPackage on probation: %v, want refused naming the 4096-byte cap", err)
	}
	h.admit(t, dev)
	c.Close()
	<-h.relay.Link().Gone(dev.DID().String())
	h.device(t, dev, "always_on", deviceOpts{kps: [][]byte{kp(3)}}) // admitted: its next link may

	h2 := newHarness(t, func(c *Config) {
		c.Access.Probation = DefaultProbation()
		c.Access.Probation.StateBytes = 100
	})
	c3, err := link.Dial(context.Background(), link.Config{RelayURL: h2.srv.URL, Key: didtest.Key(t, 3), Clock: h2.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	_, err = c3.Publish(context.Background(), h2.state(t, didtest.Key(t, 3), c3.Hello(), "sleep", deviceOpts{}))
	if err == nil || !strings.Contains(err.Error(), "on probation") {
		t.Fatalf("a card over probation's 100 bytes: %v, want refused", err)
	}
	if _, err := h2.states.Get(context.Background(), didtest.Key(t, 3).DID().String()); err != agents.ErrUnknownAgent {
		t.Errorf("refused state stored: %v", err)
	}
}

// TestMaxAgents: beyond --max-agents a new admitted device's link is
// refused with 507 relay_full_agents; a known one still links.
func TestMaxAgents(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.MaxAgents = 1; c.Access.AdmitAll = true })
	first := didtest.Key(t, 1)
	h.publishOffline(t, first, "sleep", deviceOpts{})
	_, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: didtest.Key(t, 2), Clock: h.clk})
	if err == nil || !strings.Contains(err.Error(), "507") || !strings.Contains(err.Error(), "relay_full_agents") || !strings.Contains(err.Error(), "--max-agents") {
		t.Fatalf("a second device with --max-agents 1: %v, want 507 relay_full_agents naming the cap", err)
	}
	h.publishOffline(t, first, "sleep", deviceOpts{})
}

// TestProbationPoolAgents: devices on probation fill their own pool
// (507 relay_full_probation) and never the admitted devices' --max-agents:
// made-up DIDs cannot keep an admitted device from linking.
func TestProbationPoolAgents(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Limits.MaxAgents = 1
		c.Access.Probation = DefaultProbation()
		c.Access.Probation.Pool.Agents = 2
	})
	for n := range 2 {
		h.publishOffline(t, didtest.Key(t, byte(10+n)), "sleep", deviceOpts{})
	}
	_, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: didtest.Key(t, 12), Clock: h.clk})
	if err == nil || !strings.Contains(err.Error(), "507") || !strings.Contains(err.Error(), "relay_full_probation") || !strings.Contains(err.Error(), "--probation-agents") {
		t.Fatalf("a third device on probation with a pool of 2: %v, want 507 relay_full_probation naming the flag", err)
	}
	admitted := didtest.Key(t, 1)
	h.admit(t, admitted)
	h.publishOffline(t, admitted, "sleep", deviceOpts{}) // the pool does not count against --max-agents
}

// TestProbationPoolLinks: devices on probation hold at most the pool's
// links (503 probation_links_full, which a device retries); an admitted
// device still links, and a device on probation whose link ended makes
// room.
func TestProbationPoolLinks(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Access.Probation = DefaultProbation()
		c.Access.Probation.Pool.Links = 2
	})
	var held []*link.Client
	for n := range 2 {
		held = append(held, h.device(t, didtest.Key(t, byte(20+n)), "sleep", deviceOpts{}))
	}
	_, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: didtest.Key(t, 22), Clock: h.clk})
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "probation_links_full") {
		t.Fatalf("a third link on probation with a pool of 2: %v, want 503 probation_links_full", err)
	}
	admitted := didtest.Key(t, 1)
	h.admit(t, admitted)
	h.device(t, admitted, "sleep", deviceOpts{}).Close()
	held[0].Close()
	<-h.relay.Link().Gone(didtest.Key(t, 20).DID().String())
	h.device(t, didtest.Key(t, 22), "sleep", deviceOpts{}).Close()
}

// TestMaxStateBytes: once the agents store takes --max-state-bytes, a
// new device's link is refused with 507 relay_full_state naming the cap,
// and a known device may publish no new KeyPackages.
func TestMaxStateBytes(t *testing.T) {
	h := newHarness(t, nil)
	known := didtest.Key(t, 2)
	h.publishOffline(t, known, "sleep", deviceOpts{})
	h.relay.cfg.Limits.MaxStateBytes = 1 // what the store holds now passes it
	dev := didtest.Key(t, 1)
	_, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: dev, Clock: h.clk})
	if err == nil || !strings.Contains(err.Error(), "507") || !strings.Contains(err.Error(), "relay_full_state") || !strings.Contains(err.Error(), "--max-state-bytes") {
		t.Fatalf("a new device over the cap: %v, want 507 relay_full_state naming the cap", err)
	}
	if _, err := h.states.Get(context.Background(), dev.DID().String()); err != agents.ErrUnknownAgent {
		t.Errorf("refused state stored: %v", err)
	}
	c, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: known, Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Publish(context.Background(), h.state(t, known, c.Hello(), "sleep", deviceOpts{kps: [][]byte{kp(1)}}))
	if err == nil || !strings.Contains(err.Error(), "relay_full_state") {
		t.Errorf("new KeyPackages over the cap: %v, want relay_full_state", err)
	}
	if _, err := c.Publish(context.Background(), h.state(t, known, c.Hello(), "sleep", deviceOpts{})); err != nil {
		t.Errorf("a state without KeyPackages over the cap: %v, want it stored", err)
	}
}

// TestMaxQueueBytes: once all queues together hold --max-queue-bytes, a
// send is refused with 507 relay_queue_full naming the cap, nothing is
// queued, and what was queued before is kept; acknowledged records free
// room once the count is refreshed.
func TestMaxQueueBytes(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.MaxQueueBytes = int64(2 * len(sendBody)); c.Access.AdmitAll = true })
	a, b, alice := didtest.Key(t, 1), didtest.Key(t, 2), didtest.Key(t, 3)
	h.publishOffline(t, a, "sleep", deviceOpts{})
	h.publishOffline(t, b, "sleep", deviceOpts{})
	for _, dev := range []*did.PrivateKey{a, b} {
		if r := h.post(t, dev.DID(), alice, "1.0", sendBody); r.status != 503 || r.json["queued"] != true {
			t.Fatalf("send under the cap: %d %s", r.status, r.body)
		}
	}
	r := h.post(t, a.DID(), alice, "1.0", sendBody)
	if r.status != 507 || !strings.Contains(string(r.body), "relay_queue_full") || !strings.Contains(string(r.body), "--max-queue-bytes") {
		t.Fatalf("send over the relay's cap: %d %s, want 507 relay_queue_full naming the cap", r.status, r.body)
	}
	if n := labelledCounter(t, h.relay, "torpor_relay_cap_refusals_total", map[string]string{"cap": "queue_bytes"}); n != 1 {
		t.Errorf("torpor_relay_cap_refusals_total{cap=\"queue_bytes\"} = %v, want 1", n)
	}
	if n, m := len(h.queued(t, a.DID())), len(h.queued(t, b.DID())); n != 1 || m != 1 {
		t.Fatalf("queued %d and %d, want 1 and 1 (nothing lost, nothing added)", n, m)
	}
	if err := h.q.Ack(context.Background(), b.DID().String(), []uint64{h.queued(t, b.DID())[0].Seq}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(queueCapRecountFull)
	if r := h.post(t, a.DID(), alice, "1.0", sendBody); r.status != 503 || r.json["queued"] != true {
		t.Errorf("send after room was freed: %d %s", r.status, r.body)
	}
}

// TestForgetSilent: an agent whose device published nothing for longer
// than ForgetAfter, and is not linked, loses its queue, KeyPackages and
// state; a recent one and a linked one are kept; the forgotten device can
// link again and starts afresh, still admitted.
func TestForgetSilent(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.ForgetAfter = 24 * time.Hour })
	ctx := context.Background()
	old, recent, linked, alice := didtest.Key(t, 1), didtest.Key(t, 2), didtest.Key(t, 3), didtest.Key(t, 4)
	h.admit(t, old)
	h.publishOffline(t, old, "sleep", deviceOpts{kps: [][]byte{kp(1)}, lastRes: kp(9)})
	if r := h.post(t, old.DID(), alice, "1.0", sendBody); r.json["queued"] != true {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	c := h.device(t, linked, "always_on", deviceOpts{})
	defer c.Close()
	h.clk.Advance(25 * time.Hour)
	h.publishOffline(t, recent, "sleep", deviceOpts{})
	if n := h.relay.forgetSilent(ctx); n != 1 {
		t.Errorf("forgot %d agents, want 1", n)
	}
	if n := labelledCounter(t, h.relay, "torpor_relay_agents_forgotten_total", nil); n != 1 {
		t.Errorf("torpor_relay_agents_forgotten_total = %v, want 1", n)
	}
	if _, err := h.states.Get(ctx, old.DID().String()); err != agents.ErrUnknownAgent {
		t.Errorf("silent agent's state: %v, want forgotten", err)
	}
	if pool, lr, _ := h.states.KeyPackages(ctx, old.DID().String()); len(pool) != 0 || lr != nil {
		t.Errorf("silent agent's KeyPackages kept: %d, %x", len(pool), lr)
	}
	if n := len(h.queued(t, old.DID())); n != 0 {
		t.Errorf("silent agent's queue holds %d records", n)
	}
	for _, k := range []*did.PrivateKey{recent, linked} {
		if _, err := h.states.Get(ctx, k.DID().String()); err != nil {
			t.Errorf("%s forgotten: %v", k.DID(), err)
		}
	}
	h.publishOffline(t, old, "sleep", deviceOpts{})
	if ok, _ := h.states.Admitted(ctx, old.DID().String()); !ok {
		t.Error("the admission did not outlive the forgetting")
	}
}

// failingUsage is an agents store whose Usage and listing fail, as a
// JetStream bucket without a leader does.
type failingUsage struct{ agents.Store }

func (failingUsage) Usage(context.Context) (agents.Usage, error) {
	return agents.Usage{}, errors.New("nats: timeout")
}

func (failingUsage) Agents(context.Context) ([]string, error) {
	return nil, errors.New("nats: timeout")
}

// TestLinkAdmissionStoreFailure: when the relay cannot read its store to
// decide on a new device's link, the device gets 503 store_unavailable,
// which it retries, not 403 agent_not_admitted, which says it is refused.
func TestLinkAdmissionStoreFailure(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.MaxAgents = 10; c.Stores.States = failingUsage{c.Stores.States} })
	_, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: didtest.Key(t, 1), Clock: h.clk})
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "store_unavailable") {
		t.Fatalf("link while the store fails: %v, want 503 store_unavailable", err)
	}
}

// countingAdmitted is an agents store that counts its Admitted reads.
type countingAdmitted struct {
	agents.Store
	n atomic.Int64
}

func (c *countingAdmitted) Admitted(ctx context.Context, agent string) (bool, error) {
	c.n.Add(1)
	return c.Store.Admitted(ctx, agent)
}

// TestQueueCapReadsNoAdmission: the relay-wide queue cap takes the
// agent's class (which pool its bytes count against) from the relay's
// memory, not from a store read: a send to a device on probation reads
// its admission once, for its bounds' ceiling (Relay.bounds), and the cap
// adds none but the census's.
func TestQueueCapReadsNoAdmission(t *testing.T) {
	var states *countingAdmitted
	h := newHarness(t, func(c *Config) {
		states = &countingAdmitted{Store: c.Stores.States}
		c.Stores.States = states
	})
	dev := didtest.Key(t, 1)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	before := states.n.Load()
	const sends = 5
	for i := range sends {
		if r := h.post(t, dev.DID(), didtest.Key(t, byte(2+i)), "1.0", sendBody); r.status != 503 || r.json["queued"] != true {
			t.Fatalf("send %d: %d %s", i, r.status, r.body)
		}
	}
	if n := states.n.Load() - before; n > sends+1 {
		t.Errorf("%d sends to a device on probation read its admission %d times, want at most %d (one each for the bounds, one census)", sends, n, sends+1)
	}
}
