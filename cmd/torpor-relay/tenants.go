package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/relaystore"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// tenantArgs are the flags of a hosted relay (docs/tenants.md).
type tenantArgs struct {
	file, usageKey string
	metricsLimit   int
	inFlight       int
	// relay is the running relay, set once it is made: the flush loop
	// samples its stores (relay.SampleTenants).
	relay atomic.Pointer[relay.Relay]
}

func (t *tenantArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&t.file, "tenants", "", "A hosted relay's tenants: a JSON file {\"tenants\":[{\"owner\":DID,\"quotas\":{\"devices\":N,\"queuedBytes\":N,\"keyPackageBytes\":N,\"requestsPerSecond\":N,\"updateBytes\":N,\"byteHours\":N}}]} (zero: no limit; byteHours per calendar month, UTC), kept in tenants.db in --data-dir, or with --store jetstream in the shared bucket of the cluster, where every relay should be given the same file (docs/tenants.md).")
	fs.IntVar(&t.metricsLimit, "tenant-metrics-limit", 100, "With --tenants: how many tenants get a label of their own in /metrics (the first seen); the others count under tenant=\"other\".")
	fs.IntVar(&t.inFlight, "tenant-inflight", relay.DefaultTenantInFlight, "With --tenants: how many of one tenant's sender requests the relay works on at once; the tenant's others wait, unread, for their turn, so that a tenant's flood does not slow the others' (docs/tenants.md, \"Noisy neighbours\").")
	fs.StringVar(&t.usageKey, "usage-key", "", "With --tenants: the relay's key file (torporctl keygen) that signs the tenants' hourly usage records; its DID is what tenants verify them with.")
}

func (t *tenantArgs) validate() error {
	switch {
	case t.file == "" && t.usageKey != "":
		return errors.New("--usage-key needs --tenants")
	case t.metricsLimit < 1:
		return fmt.Errorf("--tenant-metrics-limit %d: want at least 1", t.metricsLimit)
	case t.inFlight < 1:
		return fmt.Errorf("--tenant-inflight %d: want at least 1", t.inFlight)
	}
	return nil
}

// tenantFile is the --tenants file.
type tenantFile struct {
	Tenants []struct {
		Owner  did.DID        `json:"owner"`
		Quotas tenancy.Quotas `json:"quotas"`
	} `json:"tenants"`
}

// readTenantFile reads the --tenants file strictly: an unknown member, a
// repeated owner or a bad quota is an error naming the file.
func readTenantFile(path string) (tenantFile, error) {
	var f tenantFile
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("--tenants: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("--tenants %s: %v", path, err)
	}
	seen := map[string]bool{}
	for i, t := range f.Tenants {
		if t.Owner.IsZero() || seen[t.Owner.String()] {
			return f, fmt.Errorf("--tenants %s: tenant %d: a missing or repeated owner", path, i+1)
		}
		seen[t.Owner.String()] = true
		if err := t.Quotas.Check(); err != nil {
			return f, fmt.Errorf("--tenants %s: tenant %s: %v", path, t.Owner, err)
		}
	}
	return f, nil
}

// openTenants opens the ledger (tenants.db in the data directory, or on
// JetStream conn's shared bucket when conn is not nil), sets the file's
// tenants and quotas in it and writes the counted requests every few
// seconds until stop, which stops that and closes the file. It returns
// a nil ledger without --tenants.
func openTenants(a *args, conn *jsstore.Conn, clk clock.Clock, log *slog.Logger) (l tenants.Store, key *did.PrivateKey, stop func(), err error) {
	if a.tenants.file == "" {
		return nil, nil, func() {}, nil
	}
	if l, key, err = openLedger(a, conn, clk, log); err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		flushTenants(ctx, l, &a.tenants.relay, clk, log)
	}()
	return l, key, func() {
		cancel()
		<-done
		if err := l.Close(); err != nil {
			log.Warn("closing the tenants' ledger", "err", err)
		}
	}, nil
}

// openLedger reads --tenants and --usage-key and opens the ledger with
// the file's tenants and quotas: tenants.db, or conn's when it is set.
func openLedger(a *args, conn *jsstore.Conn, clk clock.Clock, log *slog.Logger) (tenants.Store, *did.PrivateKey, error) {
	f, err := readTenantFile(a.tenants.file)
	if err != nil {
		return nil, nil, err
	}
	var key *did.PrivateKey
	if a.tenants.usageKey != "" {
		if key, err = did.LoadKey(a.tenants.usageKey); err != nil {
			return nil, nil, fmt.Errorf("--usage-key: %w", err)
		}
	}
	var l tenants.Store
	if conn != nil {
		l = conn.Tenants(clk)
	} else {
		path := filepath.Join(a.dataDir, "tenants.db")
		if l, err = tenants.OpenLedger(path, clk); err != nil {
			return nil, nil, relaystore.Fix(path, err)
		}
	}
	for _, t := range f.Tenants {
		if err := l.Put(t.Owner, t.Quotas); err != nil {
			l.Close()
			return nil, nil, err
		}
	}
	log.Info("tenants", "tenants", len(f.Tenants), "file", a.tenants.file, "usageKey", key != nil)
	return l, key, nil
}

// flushTenants samples the tenants' stored bytes (once the relay runs)
// and writes the ledger's counted requests every 5 s of the relay's clock
// until ctx ends.
func flushTenants(ctx context.Context, l tenants.Store, r *atomic.Pointer[relay.Relay], clk clock.Clock, log *slog.Logger) {
	for clock.Sleep(ctx, clk, 5*time.Second) == nil {
		if rr := r.Load(); rr != nil {
			if err := rr.SampleTenants(ctx); err != nil && ctx.Err() == nil {
				log.Warn("sampling the tenants' stored bytes failed", "err", err)
			}
		}
		if err := l.Flush(); err != nil {
			log.Warn("writing the tenants' request counts failed; kept for the next try", "err", err)
		}
	}
}
