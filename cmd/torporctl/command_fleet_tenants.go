package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// tenantColumns are the columns of fleet tenants: 99 characters with the
// spaces between them. DEVICES holds "150/1000" (of the devices quota);
// the byte quotas are in --json.
var tenantColumns = []column{
	{"TENANT", 11}, {"DEVICES", 9}, {"AWAKE", 5}, {"ASLEEP", 6}, {"OVERDUE", 7}, {"HALTED", 6}, {"OFFLINE", 7},
	{"QUEUED", 10}, {"KP", 10}, {"UPDATES", 10}, {"OPS", 3}, {"HOST", 4},
}

// fleetTenants prints a hosted relay's tenants (GET /fleet/api/tenants,
// the relay's own operators only), or with asJSON the relay's JSON.
func fleetTenants(ctx context.Context, w io.Writer, api *operatorapi.Client, asJSON bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, raw, err := api.FleetTenants(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		w.Write(raw)
		fmt.Fprintln(w)
		return nil
	}
	printTenants(w, l)
	return nil
}

// printTenants prints one row per tenant, the totals and the devices in
// no tenant. HOST says "sees" when the tenant's owner lets the relay's
// operators see its devices (torporctl fleet lists them then).
func printTenants(w io.Writer, l operatorapi.TenantList) {
	w = safetext.Writer(w)
	head := make([]string, len(tenantColumns))
	for i, c := range tenantColumns {
		head[i] = c.title
	}
	line := func(cells []string) { fmt.Fprintln(w, strings.TrimRight(row(tenantColumns, cells), " ")) }
	line(head)
	for _, t := range l.Tenants {
		line(tenantCells(shortID(t.Owner), t, true))
	}
	if len(l.Tenants) == 0 {
		fmt.Fprintln(w, "(no tenant)")
	}
	line(tenantCells("all", l.Total, false))
	none := tenantCells("no tenant", operatorapi.Tenant{Devices: l.NoTenant.Devices, States: l.NoTenant}, false)
	line(append(none[:7], "", "", "", "", ""))
}

// tenantCells are t's cells, in tenantColumns' order, named name; quotas
// and HOST only for a tenant's own row.
func tenantCells(name string, t operatorapi.Tenant, own bool) []string {
	devices, host := strconv.Itoa(t.Devices), ""
	if own && t.Quotas.Devices > 0 {
		devices += "/" + strconv.FormatInt(t.Quotas.Devices, 10)
	}
	if own {
		host = "-"
		if t.HostSeesDevices {
			host = "sees"
		}
	}
	s := t.States
	return []string{name, devices, strconv.Itoa(s.Awake), strconv.Itoa(s.Asleep), strconv.Itoa(s.Overdue), strconv.Itoa(s.Halted), strconv.Itoa(s.Offline),
		byteCount(t.QueuedBytes), byteCount(t.KeyPackageBytes), byteCount(t.UpdateBytes), strconv.Itoa(t.Operators), host}
}

// byteCount is n bytes in at most 10 characters: "512 B", "1.5 KiB",
// "12.0 MiB", "3.2 GiB".
func byteCount(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
