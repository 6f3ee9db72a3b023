package relay

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// What the host (the relay's own operators) sees of its tenants: the list
// GET /operator/tenants, the console's page of tenants and
// /fleet/api/tenants answer (tenantList), and the tenant label and the
// scoping of the fleet metrics (metrics_fleet.go). docs/tenants.md,
// "Scoping".

// tenantIndex is the tenants with their devices, read once for a list or
// a scrape.
type tenantIndex struct {
	tenants []tenants.Info
	devices [][]string     // each tenant's devices, as tenants is ordered
	of      map[string]int // a device's DID: its tenant's index
}

// readTenants reads the tenants and their devices; without tenants the
// index is empty.
func (s *Relay) readTenants() (tenantIndex, error) {
	x := tenantIndex{of: map[string]int{}}
	l := s.cfg.Stores.Tenants
	if l == nil {
		return x, nil
	}
	ts, err := l.Tenants()
	if err != nil {
		return x, err
	}
	x.tenants, x.devices = ts, make([][]string, len(ts))
	for i, t := range ts {
		if x.devices[i], err = l.Devices(t.Owner); err != nil {
			return x, err
		}
		for _, d := range x.devices[i] {
			x.of[d] = i
		}
	}
	return x, nil
}

// ownerOf is the owner DID of agent's tenant, "" for none.
func (x tenantIndex) ownerOf(agent string) string {
	if i, ok := x.of[agent]; ok {
		return x.tenants[i].Owner.String()
	}
	return ""
}

// hidden reports whether agent is kept from the host: it is in a tenant
// whose owner's list does not say hostSeesDevices.
func (x tenantIndex) hidden(agent string) bool {
	i, ok := x.of[agent]
	return ok && !x.tenants[i].HostSeesDevices
}

// tenantList is the host's list of tenants: each tenant's quotas, its
// devices counted by state (console.Source.Tally, as the fleet's summary
// counts them), the bytes queued for them and their KeyPackages, its
// update repository's blob bytes and its number of operators; the totals;
// and the devices in no tenant by state. It names no device.
func (s *Relay) tenantList(ctx context.Context) (operatorapi.TenantList, error) {
	x, err := s.readTenants()
	if err != nil {
		return operatorapi.TenantList{}, err
	}
	now := s.clk.Now()
	states, err := s.view.Tally(ctx, now, x.ownerOf)
	if err != nil {
		return operatorapi.TenantList{}, err
	}
	l := operatorapi.TenantList{Now: now.UTC(), Tenants: make([]operatorapi.Tenant, 0, len(x.tenants)), NoTenant: states[""]}
	for i, t := range x.tenants {
		tt, err := s.tenantLine(ctx, t, x.devices[i], now)
		if err != nil {
			return operatorapi.TenantList{}, err
		}
		tt.States = states[tt.Owner]
		l.Tenants = append(l.Tenants, tt)
		l.Total.Add(tt)
	}
	return l, nil
}

// tenantLine is t's line of the host's list but its states: devs are
// t's devices.
func (s *Relay) tenantLine(ctx context.Context, t tenants.Info, devs []string, now time.Time) (operatorapi.Tenant, error) {
	tt := operatorapi.Tenant{Owner: t.Owner.String(), Quotas: t.Quotas, Devices: len(devs), Operators: len(t.Operators), HostSeesDevices: t.HostSeesDevices,
		ByteHoursPeriod: tenants.PeriodOf(now), MilliByteHours: t.Held.PeriodByteMillisAt(now) / 3600}
	var err error
	if tt.QueuedBytes, err = s.queuedFor(ctx, devs, now); err != nil {
		return tt, err
	}
	if tt.KeyPackageBytes, _, err = s.keyPackagesOf(ctx, devs, ""); err != nil {
		return tt, err
	}
	repo, err := s.tenantUpdates(t.Owner)
	switch {
	case errors.Is(err, updaterepo.ErrNoPartitions):
		return tt, nil
	case err == nil && repo != nil:
		tt.UpdateBytes, err = repo.BlobBytes()
	}
	return tt, err
}

// serveTenants is GET /operator/tenants, for the relay's own operators
// (the host): tenantList.
func (s *Relay) serveTenants(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.operator(w, r)
	if !ok {
		return
	}
	if !s.operators[caller.String()] {
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "not_operator", "message": "the list of tenants is for the relay's own operators"})
		return
	}
	l, err := s.tenantList(r.Context())
	if err != nil {
		s.storeFailed(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, l)
}

// consoleTenants is console.Tenants over the relay's list.
type consoleTenants struct{ s *Relay }

// Tenants implements console.Tenants.
func (c consoleTenants) Tenants(ctx context.Context) (operatorapi.TenantList, error) {
	return c.s.tenantList(ctx)
}

// tenantDevices lists the devices of the tenant owner names, for the
// console's tenant filter (console.Source.TenantDevices); what the
// operator may see of them is still consoleVisible's business.
func (s *Relay) tenantDevices(ctx context.Context, owner string) ([]string, error) {
	o, err := did.Parse(owner)
	if err != nil {
		return nil, nil // no tenant has it: no device
	}
	return s.cfg.Stores.Tenants.Devices(o)
}
