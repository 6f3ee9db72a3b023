package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

func TestTenantFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o600)
		return p
	}
	owner, _ := did.Generate(nil)
	o := owner.DID().String()
	for name, c := range map[string]struct {
		argv []string
		want string
	}{
		"no tenant labels":    {[]string{"--tenant-metrics-limit", "0"}, "--tenant-metrics-limit 0"},
		"no tenant in flight": {[]string{"--tenant-inflight", "0"}, "--tenant-inflight 0"},
		"usage key alone":     {[]string{"--usage-key", "k"}, "--usage-key needs --tenants"},
	} {
		if _, err := parseArgs(c.argv, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	for name, body := range map[string]string{
		"unknown member": `{"tenants":[{"owner":"` + o + `","quota":{}}]}`,
		"repeated owner": `{"tenants":[{"owner":"` + o + `"},{"owner":"` + o + `"}]}`,
		"negative quota": `{"tenants":[{"owner":"` + o + `","quotas":{"devices":-1}}]}`,
		"bad owner":      `{"tenants":[{"owner":"did:key:nope"}]}`,
	} {
		if _, err := readTenantFile(write("t.json", body)); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

// TestRunTenants starts the relay with --tenants and --usage-key, on
// bbolt files and on a real nats-server: the owner's operator list is
// taken, and its operator reads a usage record that verifies with the
// usage key's DID.
func TestRunTenants(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { runTenants(t) })
	t.Run("jetstream", func(t *testing.T) {
		srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
		runTenants(t, "--store", "jetstream", "--nats", srv.URL(), "--nats-replicas", "1", "--nats-monitor", srv.MonitorURL())
	})
}

func runTenants(t *testing.T, store ...string) {
	dir := t.TempDir()
	owner, _ := did.Generate(nil)
	op, _ := did.Generate(nil)
	usage, _ := did.Generate(nil)
	keyFile := filepath.Join(dir, "usage.key")
	if err := did.SaveKey(keyFile, usage, false); err != nil {
		t.Fatal(err)
	}
	tf := filepath.Join(dir, "tenants.json")
	os.WriteFile(tf, []byte(`{"tenants":[{"owner":"`+owner.DID().String()+`","quotas":{"devices":2,"requestsPerSecond":10}}]}`), 0o600)
	r, err := startRun(t, dir, append([]string{"--tenants", tf, "--usage-key", keyFile}, store...)...)
	if err != nil {
		t.Fatalf("run ended early: %v", err)
	}
	base := "http://" + r.http
	list, _ := tenancy.SignOperatorList(owner, tenancy.OperatorList{Operators: []string{op.DID().String()}}, time.Now(), 0)
	req, _ := http.NewRequest("PUT", base+"/tenants/operators", bytes.NewReader(list))
	if st, b := doReq(t, req); st != 200 {
		t.Fatalf("operator list: %d %s", st, b)
	}
	req, _ = http.NewRequest("GET", base+"/operator/tenants/"+owner.DID().String()+"/usage", nil)
	tok, _ := bearer.IssuePurpose(op, base, bearer.OperatorPurpose("GET", req.URL.EscapedPath()), time.Now(), bearer.OperatorTTL)
	req.Header.Set("Authorization", bearer.Authorization(tok))
	st, b := doReq(t, req)
	if st != 200 {
		t.Fatalf("usage: %d %s", st, b)
	}
	if _, err := tenancy.VerifyRecord(b, usage.DID()); err != nil {
		t.Errorf("usage record %s: %v", b, err)
	}
}

func doReq(t *testing.T, req *http.Request) (int, []byte) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}
