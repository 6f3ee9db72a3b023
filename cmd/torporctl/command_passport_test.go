package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// passportCtl runs torporctl in-process and returns its exit code and output.
func passportCtl(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestPassportIssueVerifyChain(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	dids := map[string]string{}
	for _, n := range []string{"principal", "a", "b", "device"} {
		code, out, errs := passportCtl("keygen", p(n+".key"))
		if code != 0 {
			t.Fatalf("keygen %s: %d %s", n, code, errs)
		}
		dids[n] = strings.TrimSpace(out)
	}
	write := func(name, s string) {
		if err := os.WriteFile(p(name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("root.json", `[{"v":"lap-scope-v0","act":"finance:pay","res":"ap2://rails/stripe/**",`+
		`"cap":{"max_per_tx":100,"max_cumulative":1000,"unit":"USD","window":"utc_day"},"depth":2}]`)
	write("narrow.json", `[{"v":"lap-scope-v0","act":"finance:pay:escrow","res":"ap2://rails/stripe/inv/**",`+
		`"cap":{"max_per_tx":50,"max_cumulative":500,"unit":"USD","window":"utc_day"},"depth":1}]`)
	write("wide.json", `[{"v":"lap-scope-v0","act":"finance:pay","res":"ap2://rails/**",`+
		`"cap":{"max_per_tx":50,"max_cumulative":500,"unit":"USD","window":"utc_day"},"depth":1}]`)

	code, tok, errs := passportCtl("passport", "issue", "--key", p("principal.key"), "--sub", dids["a"], "--aud", dids["device"], "--envelope", p("root.json"))
	if code != 0 {
		t.Fatalf("issue root: %d %s", code, errs)
	}
	write("root.jws", tok)
	code, tok, errs = passportCtl("passport", "issue", "--key", p("a.key"), "--sub", dids["b"], "--aud", dids["device"],
		"--envelope", p("narrow.json"), "--parent", p("root.jws"))
	if code != 0 {
		t.Fatalf("issue delegate: %d %s", code, errs)
	}
	write("b.jws", tok)
	code, out, errs := passportCtl("passport", "verify", "--aud", dids["device"], p("root.jws"), p("b.jws"))
	if code != 0 || !strings.Contains(out, "principal "+dids["principal"]+"\nholder "+dids["b"]+"\n") {
		t.Fatalf("verify: %d %q %s", code, out, errs)
	}

	code, _, errs = passportCtl("passport", "issue", "--key", p("a.key"), "--sub", dids["b"], "--aud", dids["device"],
		"--envelope", p("wide.json"), "--parent", p("root.jws"))
	if code != 1 || !strings.Contains(errs, "not covered by --parent") {
		t.Errorf("widened delegate: %d %s", code, errs)
	}
	code, _, errs = passportCtl("passport", "verify", "--aud", dids["a"], p("root.jws"), p("b.jws"))
	if code != 1 || !strings.Contains(errs, "passport for another audience") {
		t.Errorf("wrong audience: %d %s", code, errs)
	}
	code, _, errs = passportCtl("passport", "verify", "--aud", dids["device"], p("b.jws"))
	if code != 0 {
		t.Errorf("the delegate's passport alone verifies as a one-link chain: %d %s", code, errs)
	}
	if code, _, _ = passportCtl("passport", "sign"); code != 2 {
		t.Errorf("unknown passport command: exit %d, want 2", code)
	}
}
