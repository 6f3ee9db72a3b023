package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

func TestTenantUsageVerify(t *testing.T) {
	dir := t.TempDir()
	relay, err := did.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := did.Generate(nil)
	r := tenancy.Record{Tenant: owner.DID().String(), Relay: relay.DID().String(), Hour: "2026-12-05T10:00:00Z", Complete: true, Requests: 42, MilliByteHours: 1500}
	if err := r.Sign(relay); err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(r)
	changed := bytes.Replace(good, []byte(`"requests":42`), []byte(`"requests":41`), 1)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	g, c := write("good.json", good), write("changed.json", changed)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"tenant", "usage", "--verify", "--relay-did", relay.DID().String(), g}, &out, &errb); code != 0 {
		t.Fatalf("genuine record: exit %d: %s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "ok: tenant "+owner.DID().String()) || !strings.Contains(out.String(), "42 requests, 1.500 byte-hours") {
		t.Errorf("output %q", out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"tenant", "usage", "--verify", "--relay-did", relay.DID().String(), g, c}, &out, &errb); code == 0 {
		t.Fatalf("a changed record verified: %s", out.String())
	}
	if !strings.Contains(out.String(), "changed.json: FAILED") {
		t.Errorf("output %q", out.String())
	}
	other, _ := did.Generate(nil)
	if code := run(context.Background(), []string{"tenant", "usage", "--verify", "--relay-did", other.DID().String(), g}, &out, &errb); code == 0 {
		t.Fatal("a record verified with another relay's DID")
	}
}

// TestTenantUsageVerifyUpdateBytes: a record carrying the tenant's peak
// update bytes verifies and the figure is printed; the same record with
// the figure changed fails; a record without the member (a relay from
// before it was counted) still verifies, and the member added to it fails.
func TestTenantUsageVerifyUpdateBytes(t *testing.T) {
	dir := t.TempDir()
	relay, _ := did.Generate(nil)
	owner, _ := did.Generate(nil)
	sign := func(r tenancy.Record) []byte {
		if err := r.Sign(relay); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		return b
	}
	withBytes := sign(tenancy.Record{Tenant: owner.DID().String(), Relay: relay.DID().String(), Hour: "2026-12-05T10:00:00Z", Requests: 3, PeakUpdateBytes: new(int64(5000))})
	without := sign(tenancy.Record{Tenant: owner.DID().String(), Relay: relay.DID().String(), Hour: "2026-12-05T11:00:00Z", Requests: 4})
	for _, c := range []struct {
		name string
		b    []byte
		ok   bool
		out  string
	}{
		{"with.json", withBytes, true, "3 requests, 0.000 byte-hours, 5000 peak update bytes"},
		{"changed.json", bytes.Replace(withBytes, []byte(`"peakUpdateBytes":5000`), []byte(`"peakUpdateBytes":500`), 1), false, "changed.json: FAILED"},
		{"without.json", without, true, "4 requests, 0.000 byte-hours\n"},
		{"added.json", bytes.Replace(without, []byte(`{`), []byte(`{"peakUpdateBytes":0,`), 1), false, "added.json: FAILED"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.b, 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"tenant", "usage", "--verify", "--relay-did", relay.DID().String(), p}, &out, &errb)
		if (code == 0) != c.ok || !strings.Contains(out.String(), c.out) {
			t.Errorf("%s: exit %d, output %q; want ok %v and %q", c.name, code, out.String(), c.ok, c.out)
		}
	}
}

func TestTenantOperators(t *testing.T) {
	owner, _ := did.Generate(nil)
	ownerKey := keyFile(t, owner)
	op, _ := did.Generate(nil)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"tenant", "operators", "--key", ownerKey, "--host-sees-devices", op.DID().String()}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	o, list, err := tenancy.ParseOperatorList(bytes.TrimSpace(out.Bytes()))
	if err != nil || o.Issuer != owner.DID() || len(list.Operators) != 1 || list.Operators[0] != op.DID().String() || !list.HostSeesDevices {
		t.Fatalf("list %+v by %v: %v", list, o, err)
	}
	if code := run(context.Background(), []string{"tenant", "operators", "--key", ownerKey, "alice"}, &out, &errb); code == 0 {
		t.Error("an operator that is no DID was signed")
	}
}

// TestTenantSetRefusesBadQuotas: tenant set checks its flags and the
// quotas before it reaches the relay: a missing flag, quotas that are not
// JSON, an unknown quota and a negative one are refused, each saying why.
func TestTenantSetRefusesBadQuotas(t *testing.T) {
	owner, _ := did.Generate(nil)
	base := []string{"tenant", "set", "--relay", "http://127.0.0.1:1", "--key", "host.key", "--tenant", owner.DID().String()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{base, "needs --relay, --key"},
		{append(base[:len(base):len(base)], "--quotas", "devices=1"), "--quotas: invalid character"},
		{append(base[:len(base):len(base)], "--quotas", `{"seats":1}`), `unknown field "seats"`},
		{append(base[:len(base):len(base)], "--quotas", `{"devices":-1}`), "quota devices is negative"},
		{[]string{"tenant", "set", "--relay", "http://127.0.0.1:1", "--key", "host.key", "--tenant", "owner", "--quotas", "{}"}, "--tenant: "},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), c.args, &out, &errb); code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want a failure saying %q", c.args[2:], code, errb.String(), c.want)
		}
	}
}
