package relay

import (
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// BenchmarkTenantEnqueue is the CPU a queued request costs (sender and
// relay in this process, the real bbolt stores) on a relay without
// tenants, and to a device of a tenant with every quota set, whose
// tenant has 1 or 16 devices: the rate check and the queued-bytes count
// over the tenant's devices (docs/tenants.md). Compare cpu-ns/op side by
// side in one run:
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
	for _, n := range []int{1, 16} {
		b.Run("tenant-devices="+string(rune('0'+n/10))+string(rune('0'+n%10)), func(b *testing.B) {
			th := newTenantHarness(b, tenancy.Quotas{Devices: 100, QueuedBytes: 1 << 40, KeyPackageBytes: 1 << 30, RequestsPerSecond: 1 << 40}, unbounded)
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
