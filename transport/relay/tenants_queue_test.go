package relay

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// TestTenantsQueuesOnTheirTenantsSubjects: on JetStream, a device
// enrolled into a tenant before its first record has its records queued
// under the tenant's subject prefix; a device that joins its tenant with
// a record queued keeps it on its own subject until it has taken it, and
// its next records go under the tenant's prefix.
func TestTenantsQueuesOnTheirTenantsSubjects(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := jsstore.Open(ctx, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	th := newTenantHarness(t, tenancy.Quotas{}, func(c *Config) { c.Stores.Queue = conn.Queue() })
	subjects := recordSubjects(t, srv.URL())
	own := func(dev *did.PrivateKey) string { return "torpor.qrec." + b64([]byte(dev.DID().String())) }
	tenantA := func(dev *did.PrivateKey) string {
		h := sha256.Sum256([]byte(th.a.DID().String()))
		return "torpor.qrec." + b64(h[:]) + "." + b64([]byte(dev.DID().String()))
	}

	devA, old := didtest.Key(t, 70), didtest.Key(t, 74)
	if !th.enrolled(t, th.a, devA) {
		t.Fatal("enrolment failed")
	}
	th.admit(t, old) // admitted in no tenant, as a single-owner relay did
	th.publishOffline(t, old, "sleep", deviceOpts{})
	for _, dev := range []*did.PrivateKey{devA, old} {
		th.send(t, dev)
	}
	if !th.enrolled(t, th.a, old) {
		t.Fatal("the admitted device lost its admission")
	}
	if got := subjects(ctx); got[tenantA(devA)] != 1 || got[own(devA)] != 1 || got[own(old)] != 1 || got[tenantA(old)] != 0 {
		t.Fatalf("subjects = %v; want a's device's record under a's prefix (and the moved marker on its own), the other's record on its own subject", got)
	}

	c := th.device(t, old, "sleep", deviceOpts{})
	if n, err := c.Drain(ctx, 10, func(context.Context, []wire.Record) error { return nil }); err != nil || n != 1 {
		t.Fatalf("Drain = %d, %v; want 1", n, err)
	}
	c.Close()
	<-th.relay.Link().Gone(old.DID().String())
	th.send(t, old)
	if got := subjects(ctx); got[own(old)] != 1 || got[tenantA(old)] != 1 {
		t.Errorf("subjects after the drain = %v; want the moved marker on %s and the new record on %s", got, own(old), tenantA(old))
	}
}

// send queues a message for the sleeping dev.
func (th *tenantHarness) send(t *testing.T, dev *did.PrivateKey) {
	t.Helper()
	if r := th.post(t, dev.DID(), didtest.Key(t, 90), "1.0", sendV1); r.json["queued"] != true {
		t.Fatalf("send: %d %s, want queued", r.status, r.body)
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// recordSubjects reads how many messages each subject of the queue's
// stream holds, straight from the server at url.
func recordSubjects(t *testing.T, url string) func(ctx context.Context) map[string]uint64 {
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context) map[string]uint64 {
		s, err := js.Stream(ctx, "TORPOR_QUEUE_RECORDS")
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter("torpor.qrec.>"))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects
	}
}
