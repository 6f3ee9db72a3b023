package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// putSigned stores a device named name with a status it signed, as its
// link would have, and returns its DID.
func putSigned(t *testing.T, r *worldtest.Relay, name string, ws wire.Status) string {
	t.Helper()
	k, _ := did.Generate(nil)
	now := time.Now()
	o, err := governed.Sign(k, governed.Template{IssuedAt: now, Semantic: governed.Semantic{Schema: wire.StatusSchema}, Purpose: wire.PurposeStatus, Payload: ws})
	if err != nil {
		t.Fatal(err)
	}
	st := agents.State{Mode: wake.Sleep, NextWake: now.Add(time.Hour), UpdatedAt: now, Card: []byte(`{"name":"` + name + `"}`)}
	st.Status, _ = o.MarshalJSON()
	if err := r.States.Put(context.Background(), k.DID().String(), st, nil, nil); err != nil {
		t.Fatal(err)
	}
	return k.DID().String()
}

// TestFleetUpdates: the table marks with "~" a device whose install rolled
// back and whose check was refused, and names its version and what went
// wrong after the table; --updates shows each device's version, last
// check and last install, and a row of OS bundles for a device that
// reports them; --json carries install, osUpdate and osInstall; every
// line fits 100 columns.
func TestFleetUpdates(t *testing.T) {
	op, _ := did.Generate(nil)
	r := worldtest.Start(t, relay.Config{Ops: relay.Ops{Console: &relay.ConsoleConfig{Operators: []string{op.DID().String()}, Secret: make([]byte, 32)}}})
	ago := time.Now().Add(-3 * time.Hour)
	bad := putSigned(t, r, "north-gate", wire.Status{Version: "1.3.2",
		Update:  &wire.StatusUpdate{Outcome: wire.UpdateRefused, Target: "torpor-agent/3/linux-armv6", Version: 3, Reason: "freeze"},
		Install: &wire.StatusInstall{Result: wire.InstallRolledBack, Version: "1.4.0", From: "1.3.2", At: ago, Reason: "no proof in 3 starts"}})
	putSigned(t, r, "pump-house", wire.Status{Version: "1.4.0",
		Update:    &wire.StatusUpdate{Outcome: wire.UpdateUpToDate},
		Install:   &wire.StatusInstall{Result: wire.InstallInstalled, Version: "1.4.0", From: "1.3.2", At: ago},
		OSUpdate:  &wire.StatusUpdate{Outcome: wire.UpdateVerified, Target: "os/4/rpi-arm64", Version: 4},
		OSInstall: &wire.StatusInstall{Result: wire.InstallInstalled, Version: "3", At: ago}})
	opFile := keyFile(t, op)
	_, table := ctl("fleet", "--relay", r.URL, "--key", opFile)
	if !strings.Contains(table, " ~north-gate ") || strings.Contains(table, "~pump-house") ||
		!strings.Contains(table, "\n  "+bad+" north-gate, version 1.3.2:\n    install of 1.4.0 rolled back, check refused (freeze)\n") {
		t.Errorf("fleet:\n%s\nwant north-gate marked and named after the table", table)
	}
	code, out := ctl("fleet", "--relay", r.URL, "--key", opFile, "--updates")
	lines := strings.Split(out, "\n")
	want := []string{
		"NAME         DID         WHAT  VERSION    LAST CHECK                 LAST INSTALL",
		"~north-gate  …" + bad[len(bad)-10:] + " agent 1.3.2      refused: freeze            rolled-back 1.4.0 3h ago: no p…",
		"pump-house",
		"                         os    3          verified v4                installed 3 3h ago",
	}
	if code != 0 || len(lines) < 5 || lines[1] != want[0] || lines[2] != want[1] && lines[3] != want[1] || !strings.Contains(out, want[3]+"\n") ||
		!strings.Contains(out, " agent 1.4.0      up-to-date                 installed 1.4.0 3h ago\n") {
		t.Errorf("fleet --updates: exit %d\n%s\nwant lines like\n%s", code, out, strings.Join(want, "\n"))
	}
	for _, l := range strings.Split(table+out, "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	_, out = ctl("fleet", "--relay", r.URL, "--key", opFile, "--json", "--q", "pump")
	var f operatorapi.Fleet
	if err := json.Unmarshal([]byte(out), &f); err != nil || len(f.Devices) != 1 || f.Devices[0].OSInstall == nil || f.Devices[0].OSInstall.Version != "3" ||
		f.Devices[0].OSUpdate == nil || f.Devices[0].Install == nil || !strings.Contains(out, `"osUpdate":{"outcome":"verified"`) {
		t.Errorf("fleet --json: %v\n%s", err, out)
	}
}
