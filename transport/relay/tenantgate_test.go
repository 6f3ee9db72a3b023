package relay

import (
	"context"
	"net/http"
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// TestTenantGateBoundsEachTenantAlone: a tenant holding its bound of
// places makes its next request wait (a sender that hangs up meanwhile
// gets no place) while another tenant's enters at once; a place given
// back, once however often leave is called, lets one waiter in.
func TestTenantGateBoundsEachTenantAlone(t *testing.T) {
	g := &tenantGate{limit: 2}
	bg := context.Background()
	gone, cancel := context.WithCancel(bg)
	cancel()
	a1, _, err1 := g.enter(bg, "a")
	_, _, err2 := g.enter(bg, "a")
	if err1 != nil || err2 != nil {
		t.Fatalf("a's first two places: %v, %v", err1, err2)
	}
	if _, waited, err := g.enter(gone, "a"); err == nil || !waited {
		t.Fatalf("a's third request beside a's two: waited %v, err %v; want it to wait", waited, err)
	}
	if _, waited, err := g.enter(bg, "b"); err != nil || waited { // b never waits for a: a hang here is the failure
		t.Fatalf("b's request: waited %v, err %v", waited, err)
	}
	waiter := make(chan error)
	go func() {
		leave, _, err := g.enter(bg, "a")
		if err == nil {
			defer leave()
		}
		waiter <- err
	}()
	a1()
	a1() // a second call gives back nothing more
	if err := <-waiter; err != nil {
		t.Fatalf("a's waiter after a place was given back: %v", err)
	}
	// The waiter has given its place back; a holds one. One more fits,
	// and then a is full again.
	if _, waited, err := g.enter(bg, "a"); err != nil || waited {
		t.Fatalf("a's second place after the waiter left: waited %v, err %v", waited, err)
	}
	if _, _, err := g.enter(gone, "a"); err == nil {
		t.Error("a got a third place: leave gave back more than one")
	}
}

// TestTenantsFloodWaitsBeforeItsBodyIsRead: with a tenant's one place
// (Ops.TenantInFlight 1) held, a request to the tenant's device waits,
// unread and unqueued, while the other tenant's request is queued at
// once; when the place is given back the waiting request is queued,
// and the wait is counted in torpor_relay_tenant_waits_total.
func TestTenantsFloodWaitsBeforeItsBodyIsRead(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{}, func(c *Config) { c.Ops.TenantInFlight = 1 })
	devA, devB := didtest.Key(t, 70), didtest.Key(t, 72)
	if !th.enrolled(t, th.a, devA) || !th.enrolled(t, th.b, devB) {
		t.Fatal("enrolment failed")
	}
	held, _, err := th.relay.tenantGate.enter(context.Background(), th.a.DID().String())
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan string, 1)
	th.relay.tenantGate.onWait = func(tenant string) { waiting <- tenant }
	answered := make(chan resp, 1)
	go func() { answered <- th.post(t, devA.DID(), didtest.Key(t, 100), "1.0", sendV1) }()
	if got := <-waiting; got != th.a.DID().String() {
		t.Fatalf("a request of tenant %s waited, want a's", got)
	}
	if r := th.post(t, devB.DID(), didtest.Key(t, 101), "1.0", sendV1); r.status != http.StatusServiceUnavailable {
		t.Fatalf("b's request while a's place is held: %d %s, want 503 queued", r.status, r.body)
	}
	if n := len(th.queued(t, devA.DID())); n != 0 {
		t.Fatalf("a's device holds %d records while a's one place is held, want 0", n)
	}
	held()
	if r := <-answered; r.status != http.StatusServiceUnavailable {
		t.Fatalf("a's request after its place came: %d %s, want 503 queued", r.status, r.body)
	}
	if n := len(th.queued(t, devA.DID())); n != 1 {
		t.Errorf("a's device holds %d records, want 1", n)
	}
	for owner, want := range map[string]float64{th.a.DID().String(): 1, th.b.DID().String(): 0} {
		if got := labelledCounter(t, th.relay, "torpor_relay_tenant_waits_total", map[string]string{"tenant": owner}); got != want {
			t.Errorf("torpor_relay_tenant_waits_total{tenant=%s} = %v, want %v", owner, got, want)
		}
	}
}
