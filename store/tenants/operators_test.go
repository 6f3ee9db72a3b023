package tenants

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

func TestOnlyTheOwnersOperatorsMayAct(t *testing.T) {
	f := newFixture(t, Quotas{})
	opA, opB, host := key(t, 30).DID(), key(t, 31).DID(), key(t, 32).DID()
	devA, devB, loose := key(t, 40).DID(), key(t, 41).DID(), key(t, 42).DID()
	for owner, dev := range map[*did.PrivateKey]did.DID{f.a: devA, f.b: devB} {
		if err := f.l.Enrol(owner.DID(), dev); err != nil {
			t.Fatal(err)
		}
	}
	setList(t, f, f.a, tenancy.OperatorList{Operators: []string{opA.String()}}, t0)
	setList(t, f, f.b, tenancy.OperatorList{Operators: []string{opB.String()}, HostSeesDevices: true}, t0)
	for _, c := range []struct {
		op, dev did.DID
		ok      bool
	}{{opA, devA, true}, {opB, devB, true}, {opA, devB, false}, {opB, devA, false}, {host, devA, false}, {host, devB, false}} {
		in, err := f.l.MayAct(c.op, c.dev)
		if !in || (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrNotOperator)) {
			t.Errorf("MayAct(%s, %s) = %v, %v; want allowed %v", c.op, c.dev, in, err, c.ok)
		}
	}
	if in, err := f.l.MayAct(host, loose); in || err != nil {
		t.Errorf("a device in no tenant: %v, %v", in, err)
	}
	if ts, _ := f.l.OperatorTenants(opA); !slices.Equal(ts, []did.DID{f.a.DID()}) {
		t.Errorf("opA operates %v", ts)
	}
	if info, _ := f.l.Tenant(f.b.DID()); !info.HostSeesDevices {
		t.Error("b's owner let the host see its devices; the ledger lost it")
	}
}

func TestOperatorListRefusals(t *testing.T) {
	f := newFixture(t, Quotas{})
	setList(t, f, f.a, tenancy.OperatorList{Operators: []string{key(t, 30).DID().String()}}, t0)
	stranger := key(t, 60)
	for name, c := range map[string]struct {
		k      *did.PrivateKey
		issued time.Time
		ttl    time.Duration
		list   tenancy.OperatorList
	}{
		"not a tenant's owner": {stranger, t0.Add(time.Minute), 0, tenancy.OperatorList{}},
		"older than the list":  {f.a, t0.Add(-time.Minute), 0, tenancy.OperatorList{}},
		"expired":              {f.a, t0.Add(-2 * time.Hour), time.Hour, tenancy.OperatorList{}},
		"not a DID":            {f.a, t0.Add(time.Minute), 0, tenancy.OperatorList{Operators: []string{"alice"}}},
	} {
		obj, err := tenancy.SignOperatorList(c.k, c.list, c.issued, c.ttl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.SetOperators(obj); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if info, _ := f.l.Tenant(f.a.DID()); len(info.Operators) != 1 {
		t.Errorf("a refused list changed the operators: %v", info.Operators)
	}
	obj, _ := tenancy.SignOperatorList(f.a, tenancy.OperatorList{}, t0.Add(time.Minute), 0)
	obj[len(obj)/2] ^= 1
	if _, err := f.l.SetOperators(obj); err == nil {
		t.Error("a damaged list was accepted")
	}
}

func setList(t *testing.T, f *fixture, owner *did.PrivateKey, list tenancy.OperatorList, issued time.Time) {
	t.Helper()
	obj, err := tenancy.SignOperatorList(owner, list, issued, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.l.SetOperators(obj)
	if err != nil || got != owner.DID() {
		t.Fatalf("SetOperators: %v, %v", got, err)
	}
}
