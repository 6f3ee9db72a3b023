package jsstore_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// BenchmarkTenants: CPU per operation of the tenant ledger on a sender's
// path, 16 concurrent callers, side by side in one run: the bbolt Ledger
// (one relay) and the ledger in the shared bucket of a 3-server cluster
// with 3 replicas (the embedded servers' CPU counted with the test
// process's). tenant-of: which tenant a device is in (every request to
// a device); allow: a request against a rate quota too high to refuse,
// all callers in one tenant's second; lock: a tenant's lock taken and
// released (each enqueue to a tenant with a queued_bytes quota);
// lock-hold: the lock and the ledger's Hold under it (each enqueue to a
// tenant with a byte_hours quota).
func BenchmarkTenants(b *testing.B) {
	b.Run("bolt", func(b *testing.B) {
		l, err := tenants.OpenLedger(filepath.Join(b.TempDir(), "tenants.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		benchTenants(b, l)
	})
	b.Run("R3-cluster", func(b *testing.B) {
		c := openCluster(b, cluster(b))
		benchTenants(b, c.Tenants(nil))
	})
}

func benchTenants(b *testing.B, s tenants.Store) {
	owner, _ := did.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	dev, _ := did.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	if err := s.Put(owner.DID(), tenants.Quotas{RequestsPerSecond: 1 << 40, ByteHours: tenancy.MaxByteHours}); err != nil {
		b.Fatal(err)
	}
	if err := s.Enrol(owner.DID(), dev.DID()); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	run := func(name string, op func() error) {
		parallel(b, name, &n, func(context.Context, int64) error { return op() })
	}
	run("tenant-of", func() error {
		_, ok, err := s.TenantOf(dev.DID())
		if err == nil && !ok {
			b.Error("the device is in no tenant")
		}
		return err
	})
	run("allow", func() error { return s.Allow(owner.DID()) })
	run("lock", func() error {
		unlock, err := s.Lock(context.Background(), "queued "+owner.DID().String())
		if err == nil {
			unlock()
		}
		return err
	})
	var queued atomic.Int64 // the bytes the tenant's queues would hold
	run("lock-hold", func() error {
		unlock, err := s.Lock(context.Background(), "queued "+owner.DID().String())
		if err != nil {
			return err
		}
		defer unlock()
		held := queued.Load()
		if err := s.Hold(owner.DID(), held, 100); err != nil {
			return err
		}
		queued.Store(held + 100)
		return nil
	})
}
