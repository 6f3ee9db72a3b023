package relay

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/tenancy"
	"github.com/torpor-dev/torpor/wake"
)

// BenchmarkTenantEnqueue is the CPU a queued request costs (sender and
// relay in this process, the real bbolt stores) on a relay without
// tenants, and to a device of a tenant with every quota set but
// byte_hours, and with it too (+byte-hours: the ledger's Hold, one more
// write), whose tenant has 1 or 16 devices: the rate check and the
// queued-bytes count over the tenant's devices (docs/tenants.md).
// Compare cpu-ns/op side by side in one run:
//
//	go test -run '^$' -bench BenchmarkTenantEnqueue -benchtime 300x ./transport/relay/
func BenchmarkTenantEnqueue(b *testing.B) {
	unbounded := func(c *Config) {
		c.Limits.Bounds = queuebounds.Default()
		c.Limits.Bounds.MaxMessages, c.Limits.Bounds.MaxPerPeer, c.Limits.Bounds.MaxBytes, c.Limits.Bounds.MaxPeerBytes = 1<<30, 1<<30, 1<<40, 1<<40
	}
	b.Run("no-tenants", func(b *testing.B) {
		h := newHarness(b, func(c *Config) { unbounded(c); c.Access.AdmitAll = true })
		dev := didtest.Key(b, 70)
		h.publishOffline(b, dev, "sleep", deviceOpts{})
		benchPosts(b, h, dev.DID())
	})
	for _, c := range []struct {
		n         int
		byteHours int64
	}{{1, 0}, {1, tenancy.MaxByteHours}, {16, 0}, {16, tenancy.MaxByteHours}} {
		name := "tenant-devices=" + string(rune('0'+c.n/10)) + string(rune('0'+c.n%10))
		if c.byteHours > 0 {
			name += "+byte-hours"
		}
		n := c.n
		b.Run(name, func(b *testing.B) {
			th := newTenantHarness(b, tenancy.Quotas{Devices: 100, QueuedBytes: 1 << 40, KeyPackageBytes: 1 << 30, RequestsPerSecond: 1 << 40, ByteHours: c.byteHours}, unbounded)
			var dev *did.PrivateKey
			for i := range n {
				d := didtest.Key(b, byte(100+i))
				if !th.enrolled(b, th.a, d) {
					b.Fatal("enrolment failed")
				}
				dev = d
			}
			th.publishOffline(b, dev, "sleep", deviceOpts{}) // linked again: the relay's bounds, not probation's
			benchPosts(b, th.harness, dev.DID())
		})
	}
}

func benchPosts(b *testing.B, h *harness, dev did.DID) {
	sender := didtest.Key(b, 90)
	m := benchcpu.Start(b)
	for b.Loop() {
		if r := h.post(b, dev, sender, "1.0", sendV1); r.status != 503 {
			b.Fatalf("%d %s", r.status, r.body)
		}
	}
	m.Stop()
}

// BenchmarkTenantUpdateUpload is the CPU a blob upload of 4 KiB costs
// (operator and relay in this process, a real bbolt repository): to the
// relay's own repository, to a tenant's without a quota (the tenant's
// lock, and its update bytes recorded in the ledger after the upload),
// and to a tenant's with an update_bytes quota, whose check also sums the
// repository's blobs (held: how many it holds before).
// Compare cpu-ns/op side by side in one run:
//
//	go test -run '^$' -bench BenchmarkTenantUpdateUpload -benchtime 200x ./transport/relay/
func BenchmarkTenantUpdateUpload(b *testing.B) {
	for _, c := range []struct {
		name  string
		quota int64
		held  int
		own   bool
	}{{"relays-own", 0, 0, true}, {"tenant", 0, 0, false}, {"tenant-quota-held=0", 1 << 40, 0, false}, {"tenant-quota-held=1000", 1 << 40, 1000, false}} {
		b.Run(c.name, func(b *testing.B) {
			th, _, _ := newTenantUpdates(b, tenancy.Quotas{UpdateBytes: c.quota})
			ctx := context.Background()
			api, owner := th.api(th.opA), th.a.DID().String()
			put := func(blob []byte) error {
				_, err := api.PutTenantUpdate(ctx, owner, "blob", blob)
				return err
			}
			if c.own {
				api = th.api(th.host)
				put = func(blob []byte) error { _, err := api.PutUpdate(ctx, "blob", blob); return err }
			}
			blob := make([]byte, 4<<10)
			n := uint32(0)
			next := func() []byte { n++; binary.BigEndian.PutUint32(blob, n); return blob }
			for range c.held {
				if err := put(next()); err != nil {
					b.Fatal(err)
				}
			}
			m := benchcpu.Start(b)
			for b.Loop() {
				if err := put(next()); err != nil {
					b.Fatal(err)
				}
			}
			m.Stop()
		})
	}
}

// BenchmarkTenantList is the CPU the host's list of tenants costs
// (tenantList: GET /operator/tenants, /fleet/tenants and
// /fleet/api/tenants) beside the fleet view's first page of 50 (the
// fleet page's, every device's state computed), over the real bbolt
// stores of 2,000 devices: 10 tenants of 150 and 500 in no tenant, each
// with a pool of two KeyPackages; and the reading of the tenants and
// their devices that each scrape of /metrics does once, or three times
// with per-agent metrics (readTenants). Compare cpu-ns/op side by side in one
// run:
//
//	go test -run '^$' -bench BenchmarkTenantList -benchtime 20x ./transport/relay/
func BenchmarkTenantList(b *testing.B) {
	th := newTenantHarness(b, tenancy.Quotas{})
	ctx := context.Background()
	for i := range 2000 {
		seed := make([]byte, 32)
		binary.BigEndian.PutUint32(seed, uint32(i)+1<<20)
		k, err := did.NewKeyFromSeed(seed)
		if err != nil {
			b.Fatal(err)
		}
		st := agents.State{Mode: wake.Sleep, UpdatedAt: t0, NextWake: t0.Add(20 * time.Minute), Card: fmt.Appendf(nil, `{"name":"pump-%04d"}`, i)}
		if err := th.states.Put(ctx, k.DID().String(), st, [][]byte{kp(1), kp(2)}, nil); err != nil {
			b.Fatal(err)
		}
		if i >= 1500 {
			continue
		}
		owner := didtest.Key(b, byte(200+i/150))
		if err := th.ledger.Put(owner.DID(), tenancy.Quotas{}); err != nil {
			b.Fatal(err)
		}
		if err := th.ledger.Enrol(owner.DID(), k.DID()); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("fleet-page", func(b *testing.B) {
		m := benchcpu.Start(b)
		for b.Loop() {
			if f, err := th.relay.view.Query(ctx, th.clk.Now(), operatorapi.Query{Per: operatorapi.DefaultPer}); err != nil || f.Summary.Devices != 2000 {
				b.Fatalf("%d devices, %v", f.Summary.Devices, err)
			}
		}
		m.Stop()
	})
	b.Run("read-tenants", func(b *testing.B) {
		m := benchcpu.Start(b)
		for b.Loop() {
			if x, err := th.relay.readTenants(); err != nil || len(x.of) != 1500 {
				b.Fatalf("%d devices in tenants, %v", len(x.of), err)
			}
		}
		m.Stop()
	})
	b.Run("tenant-list", func(b *testing.B) {
		m := benchcpu.Start(b)
		for b.Loop() {
			if l, err := th.relay.tenantList(ctx); err != nil || len(l.Tenants) != 12 || l.Total.Devices != 1500 {
				b.Fatalf("%d tenants, %d devices, %v", len(l.Tenants), l.Total.Devices, err)
			}
		}
		m.Stop()
	})
}
