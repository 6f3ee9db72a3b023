package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// fleetWorld is a relay with a console for one operator and two devices,
// one of them overdue.
func fleetWorld(t *testing.T) (r *worldtest.Relay, opFile, strangerFile string) {
	op, _ := did.Generate(nil)
	stranger, _ := did.Generate(nil)
	r = worldtest.Start(t, relay.Config{Ops: relay.Ops{Console: &relay.ConsoleConfig{Operators: []string{op.DID().String()}, Secret: make([]byte, 32)}}})
	now := time.Now()
	for name, next := range map[string]time.Time{"a-very-long-device-name": now.Add(time.Hour), "dead-battery": now.Add(-time.Hour)} {
		k, _ := did.Generate(nil)
		st := agents.State{Mode: wake.Sleep, NextWake: next, UpdatedAt: now.Add(-2 * time.Hour), Card: []byte(`{"name":"` + name + `"}`)}
		if err := r.States.Put(context.Background(), k.DID().String(), st, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	opFile, strangerFile = keyFile(t, op), keyFile(t, stranger)
	return r, opFile, strangerFile
}

func ctl(args ...string) (int, string) {
	var out bytes.Buffer
	code := run(context.Background(), args, &out, &out)
	return code, out.String()
}

// TestFleetTable: the table fits 100 columns, names the devices and exits
// 3 while one is overdue; --state filters; --json is the relay's JSON; a
// non-operator is refused.
func TestFleetTable(t *testing.T) {
	r, op, stranger := fleetWorld(t)
	code, out := ctl("fleet", "--relay", r.URL, "--key", op)
	if code != 3 || !strings.Contains(out, "2 devices") || !strings.Contains(out, "1 overdue") || !strings.Contains(out, "dead-battery") ||
		!strings.Contains(out, "60m ago") || !strings.Contains(out, "in 60m") {
		t.Fatalf("fleet: exit %d\n%s\nwant exit 3 and both devices", code, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	code, out = ctl("fleet", "--relay", r.URL, "--key", op, "--state", "asleep")
	if code != 3 || strings.Contains(out, "dead-battery") || !strings.Contains(out, "a-very-long") {
		t.Errorf("fleet --state asleep: exit %d\n%s\nwant only the asleep device (and exit 3: one is overdue)", code, out)
	}
	code, out = ctl("fleet", "--relay", r.URL, "--key", op, "--json", "--state", "overdue")
	var f operatorapi.Fleet
	if err := json.Unmarshal([]byte(out), &f); code != 3 || err != nil || len(f.Devices) != 1 || f.Devices[0].Name != "dead-battery" {
		t.Errorf("fleet --json --state overdue: exit %d, %v\n%s", code, err, out)
	}
	if code, out := ctl("fleet", "--relay", r.URL, "--key", stranger); code != 1 || !strings.Contains(out, "not an operator") {
		t.Errorf("fleet as a non-operator: exit %d\n%s", code, out)
	}
	if code, out := ctl("fleet", "--relay", r.URL, "--key", op, "--state", "sideways"); code != 2 {
		t.Errorf("fleet --state sideways: exit %d\n%s, want 2", code, out)
	}
}

// TestFleetOpen: fleet open prints a login link that opens a session once.
func TestFleetOpen(t *testing.T) {
	r, op, _ := fleetWorld(t)
	code, out := ctl("fleet", "open", "--relay", r.URL, "--key", op)
	link := strings.SplitN(out, "\n", 2)[0]
	if code != 0 || !strings.HasPrefix(link, r.URL+"/fleet/login?token=") {
		t.Fatalf("fleet open: exit %d\n%s", code, out)
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, want := range []int{http.StatusSeeOther, http.StatusForbidden} {
		resp, err := cl.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusSeeOther) != (len(resp.Cookies()) == 1) {
			t.Errorf("use %d of the login link: %d, %d cookies; want %d", i+1, resp.StatusCode, len(resp.Cookies()), want)
		}
	}
}

// TestFleetWatch: --watch clears the screen and prints the table again
// every --every until interrupted.
func TestFleetWatch(t *testing.T) {
	r, op, _ := fleetWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // the relay is a real peer: real time
	defer cancel()
	var out bytes.Buffer
	code := run(ctx, []string{"fleet", "--relay", r.URL, "--key", op, "--watch", "--every", "200ms"}, &out, &out)
	if n := strings.Count(out.String(), "\x1b[H\x1b[2J"); code != 3 || n < 3 || strings.Count(out.String(), "2 devices") < n-1 {
		t.Errorf("fleet --watch for 2 s: exit %d, %d screens\n%q", code, n, out.String())
	}
}

// TestFleetTableNeutralised: a name or wake reason a relay sends with a
// bidirectional override, a zero-width character or an escape sequence is
// printed with the character's code point in visible text.
func TestFleetTableNeutralised(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b strings.Builder
	printFleet(&b, operatorapi.Fleet{Now: now, Devices: []operatorapi.Device{
		{DID: "did:key:z6MkA", Name: "p\u202E1-ts", State: operatorapi.StateAsleep, LastWake: &operatorapi.Wake{At: now, Reason: "x\x1b[2J"}},
	}})
	out := b.String()
	if strings.ContainsAny(out, "\u202E\x1b") || !strings.Contains(out, "p<U+202E>1") || !strings.Contains(out, "x<U+001") { // the reason is cut to its column
		t.Errorf("the table shows hidden characters:\n%q", out)
	}
}

// TestFleetNextOverdue: an always_on device whose pulse is late says by
// how much in NEXT, whole; one whose pulse is to come says when.
func TestFleetNextOverdue(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for expected, want := range map[time.Time]string{
		now.Add(-14 * time.Minute): "overdue by 14m",
		now.Add(5 * time.Minute):   "pulse 5m",
	} {
		d := operatorapi.Device{State: operatorapi.StateOverdue, Name: "n", DID: "did:key:z6Mk", Mode: "always_on", Expected: &expected}
		row := fleetRow(deviceCells(d, now))
		if !strings.Contains(row, " "+want+" ") {
			t.Errorf("expected %v: row %q, want NEXT %q", expected.Sub(now), row, want)
		}
	}
}

// TestFleetAwaitingAdmission: on a relay with probation, a device no
// operator admitted is marked "?" and listed with the command that admits
// it, counted in the summary and flagged in --json; an admitted one is not.
func TestFleetAwaitingAdmission(t *testing.T) {
	op, _ := did.Generate(nil)
	r := worldtest.Start(t, relay.Config{Access: relay.Access{Probation: relay.DefaultProbation()},
		Ops: relay.Ops{Console: &relay.ConsoleConfig{Operators: []string{op.DID().String()}, Secret: make([]byte, 32)}}})
	ids := map[string]string{}
	for _, name := range []string{"new-device", "admitted"} {
		k, _ := did.Generate(nil)
		st := agents.State{Mode: wake.AlwaysOn, UpdatedAt: time.Now(), Card: []byte(`{"name":"` + name + `"}`)}
		if err := r.States.Put(context.Background(), k.DID().String(), st, nil, nil); err != nil {
			t.Fatal(err)
		}
		ids[name] = k.DID().String()
	}
	if err := r.States.Admit(context.Background(), ids["admitted"]); err != nil {
		t.Fatal(err)
	}
	opFile := keyFile(t, op)
	_, out := ctl("fleet", "--relay", r.URL, "--key", opFile)
	if !strings.Contains(out, "· 1 awaiting admission\n") || !strings.Contains(out, " ?new-device ") || strings.Contains(out, "?admitted") ||
		!strings.Contains(out, "admit one with: torporctl device admit DID\n  "+ids["new-device"]+" new-device\n") {
		t.Errorf("fleet:\n%s\nwant new-device (only) awaiting admission, with the command", out)
	}
	_, out = ctl("fleet", "--relay", r.URL, "--key", opFile, "--json")
	var f operatorapi.Fleet
	if err := json.Unmarshal([]byte(out), &f); err != nil || f.Summary.AwaitingAdmission != 1 {
		t.Fatalf("fleet --json: %v\n%s", err, out)
	}
	for _, d := range f.Devices {
		if d.AwaitingAdmission != (d.DID == ids["new-device"]) {
			t.Errorf("%s: awaitingAdmission %v", d.Name, d.AwaitingAdmission)
		}
	}
}

// TestFleetOpenAfterFlags: "open" may come after the flags, with their
// values; a flag's value "open" is not the subcommand.
func TestFleetOpenAfterFlags(t *testing.T) {
	for in, want := range map[string]string{
		"open --relay R":         "true --relay R",
		"--relay R open --key K": "true --relay R --key K",
		"--relay open":           "false --relay open",
		"--json":                 "false --json",
		"--relay R -- open":      "false --relay R -- open",
		"--time-scale 60 open":   "true --time-scale 60",
	} {
		open, args := fleetOpen(strings.Fields(in))
		if got := strings.Join(append([]string{fmt.Sprint(open)}, args...), " "); got != want {
			t.Errorf("fleetOpen(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFleetFilters: --q, --version and --tag reach the relay, which
// answers only the matching devices and the total, with the summary of
// the whole fleet.
func TestFleetFilters(t *testing.T) {
	r, op, _ := fleetWorld(t)
	code, out := ctl("fleet", "--relay", r.URL, "--key", op, "--json", "--q", "DEAD")
	var f operatorapi.Fleet
	if err := json.Unmarshal([]byte(out), &f); code != 3 || err != nil || len(f.Devices) != 1 || f.Devices[0].Name != "dead-battery" || f.Total != 1 || f.Summary.Devices != 2 {
		t.Errorf("fleet --q DEAD: exit %d, %v\n%s", code, err, out)
	}
	for _, flag := range []string{"--version", "--tag"} {
		code, out = ctl("fleet", "--relay", r.URL, "--key", op, "--json", flag, "9.9")
		if err := json.Unmarshal([]byte(out), &f); err != nil || len(f.Devices) != 0 || f.Total != 0 || f.Summary.Devices != 2 {
			t.Errorf("fleet %s 9.9: exit %d, %v\n%s", flag, code, err, out)
		}
	}
	code, out = ctl("fleet", "--relay", r.URL, "--key", op, "--q", "long")
	if strings.Contains(out, "dead-battery") || !strings.Contains(out, "a-very-long") {
		t.Errorf("fleet --q long: exit %d\n%s", code, out)
	}
}
