package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/transport/tenancy"
	"github.com/torpor-dev/torpor/wake"
)

// tenantsWorld is a hosted relay whose console has one host operator:
// tenant a (a quota of 7 devices, one operator) with two devices, b with
// one, and one device in no tenant. It returns the key files of the host
// and of a's operator, the owners' DIDs and the devices' DIDs.
func tenantsWorld(t *testing.T) (r *worldtest.Relay, hostFile, opFile, a, b string, devs []string) {
	host, _ := did.Generate(nil)
	ledger, err := tenants.OpenLedger(filepath.Join(t.TempDir(), "tenants.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ledger.Close() })
	r = worldtest.Start(t, relay.Config{Stores: relay.Stores{Tenants: ledger}, Access: relay.Access{Operators: []did.DID{host.DID()}},
		Ops: relay.Ops{Console: &relay.ConsoleConfig{Operators: []string{host.DID().String()}, Secret: make([]byte, 32)}}})
	ownerA, _ := did.Generate(nil)
	ownerB, _ := did.Generate(nil)
	opA, _ := did.Generate(nil)
	for owner, q := range map[*did.PrivateKey]tenancy.Quotas{ownerA: {Devices: 7}, ownerB: {}} {
		if err := ledger.Put(owner.DID(), q); err != nil {
			t.Fatal(err)
		}
	}
	list, _ := tenancy.SignOperatorList(ownerA, tenancy.OperatorList{Operators: []string{opA.DID().String()}}, time.Now(), 0)
	if _, err := ledger.SetOperators(list); err != nil {
		t.Fatal(err)
	}
	for i, owner := range []*did.PrivateKey{ownerA, ownerA, ownerB, nil} {
		k, _ := did.Generate(nil)
		devs = append(devs, k.DID().String())
		st := agents.State{Mode: wake.Sleep, NextWake: time.Now().Add(time.Hour), UpdatedAt: time.Now(), Card: []byte(`{"name":"d"}`)}
		if err := r.States.Put(context.Background(), k.DID().String(), st, nil, nil); err != nil {
			t.Fatal(err)
		}
		if owner != nil {
			if err := ledger.Enrol(owner.DID(), k.DID()); err != nil {
				t.Fatalf("device %d: %v", i, err)
			}
		}
	}
	hostFile, opFile = keyFile(t, host), keyFile(t, opA)
	return r, hostFile, opFile, ownerA.DID().String(), ownerB.DID().String(), devs
}

// TestFleetTenants: fleet tenants prints the host a row per tenant with
// its devices (of its quota) and states, the totals and the devices in
// no tenant, in at most 100 columns and without a device's DID; --json is
// the relay's TenantList; a tenant's operator is refused.
func TestFleetTenants(t *testing.T) {
	r, hostFile, opFile, a, b, devs := tenantsWorld(t)
	code, out := ctl("fleet", "--relay", r.URL, "tenants", "--key", hostFile)
	want := map[string][]string{
		shortID(a):  {"2/7", "0", "2", "0", "0", "0", "0 B", "0 B", "0 B", "1", "-"},
		shortID(b):  {"1", "0", "1", "0", "0", "0", "0 B", "0 B", "0 B", "0", "-"},
		"all":       {"3", "0", "3", "0", "0", "0", "0 B", "0 B", "0 B", "1"},
		"no tenant": {"1", "0", "1", "0", "0", "0"},
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 || !strings.HasPrefix(lines[0], "TENANT") {
		t.Fatalf("fleet tenants: exit %d\n%s", code, out)
	}
	for _, l := range lines[1:] {
		rs := []rune(l) // the first column is 11 wide
		name, rest := strings.TrimSpace(string(rs[:11])), string(rs[12:])
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("line of %d columns: %q", n, l)
		}
		if got := strings.Fields(strings.ReplaceAll(rest, " B", "_B")); strings.Join(got, " ") != strings.ReplaceAll(strings.Join(want[name], " "), " B", "_B") {
			t.Errorf("row %q: %v, want %v", name, got, want[name])
		}
	}
	for _, d := range devs {
		if strings.Contains(out, d) {
			t.Errorf("fleet tenants names the device %s", d)
		}
	}
	code, out = ctl("fleet", "tenants", "--relay", r.URL, "--key", hostFile, "--json")
	var l operatorapi.TenantList
	if err := json.Unmarshal([]byte(out), &l); code != 0 || err != nil || len(l.Tenants) != 2 || l.Total.Devices != 3 || l.NoTenant.Devices != 1 {
		t.Errorf("fleet tenants --json: exit %d, %v\n%s", code, err, out)
	}
	if code, out := ctl("fleet", "tenants", "--relay", r.URL, "--key", opFile); code != 1 || !strings.Contains(out, "403") {
		t.Errorf("fleet tenants as a tenant's operator: exit %d\n%s", code, out)
	}
}
