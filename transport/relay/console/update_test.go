package console

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/wake"
)

// TestUpdateInTheAPI: the outcome of a device's update check, from its
// signed status, is in the fleet API's device; absent for a device whose
// status has none.
func TestUpdateInTheAPI(t *testing.T) {
	s := newSite(t, "")
	dev := didtest.Key(t, 2)
	u := &wire.StatusUpdate{Outcome: wire.UpdateRefused, Target: "torpor-agent/3/linux-armv6", Version: 3, Reason: "freeze",
		Detail: "freeze: timestamp is older than the trusted one"}
	s.put(t, device{key: dev, name: "pi", mode: wake.Sleep, status: &wire.Status{Version: "1", Update: u}})
	d, err := s.src.One(context.Background(), dev.DID().String(), t0)
	if err != nil || d.Update == nil || *d.Update != *u {
		t.Fatalf("One = %+v, %v; want the status's update", d.Update, err)
	}
	tok, _ := bearer.IssuePurpose(s.op, s.origin, bearer.PurposeFleet, t0, time.Minute)
	a := s.do(t, "GET", "/fleet/api/devices/"+dev.DID().String(), map[string]string{"Authorization": "Bearer " + tok}, nil)
	var got operatorapi.Device
	if err := json.Unmarshal([]byte(a.body), &got); err != nil || got.Update == nil || got.Update.Reason != "freeze" {
		t.Errorf("API device: %d %s", a.status, a.body)
	}
	if d, err := s.src.One(context.Background(), s.dev.DID().String(), t0); err != nil || d.Update != nil {
		t.Errorf("a status without an update: %+v, %v", d.Update, err)
	}
	if !strings.Contains(a.body, `"update":{"outcome":"refused"`) {
		t.Errorf("API device's update member:\n%s", a.body)
	}
}

// outcomes is a status with a refused check, a rolled-back install and
// both OS members, its texts as a device may write them.
func outcomes() *wire.Status {
	at := t0.Add(-3 * time.Hour)
	return &wire.Status{Version: "1.3.2",
		Update: &wire.StatusUpdate{Outcome: wire.UpdateRefused, Target: "torpor-agent/3/linux-armv6", Version: 3, Reason: "freeze",
			Detail: "freeze: timestamp <b>is</b> older than the trusted one", Bytes: 12 << 10},
		Install: &wire.StatusInstall{Result: wire.InstallRolledBack, Version: "1.4.0", From: "1.3.2", At: at,
			Reason: "no proof in 3 starts: start 1: exited with status 2"},
		OSUpdate:  &wire.StatusUpdate{Outcome: wire.UpdateUpToDate, Target: "os/4/rpi-arm64", Version: 4},
		OSInstall: &wire.StatusInstall{Result: wire.InstallFailed, Version: "5", At: at, Reason: "signature verification failed"},
	}
}

// TestUpdateOutcomesInTheAPI: the last install and the OS members of the
// signed status are the fleet API's device's install, osUpdate and
// osInstall; absent for a status without them.
func TestUpdateOutcomesInTheAPI(t *testing.T) {
	s := newSite(t, "")
	dev := didtest.Key(t, 2)
	want := outcomes()
	s.put(t, device{key: dev, name: "pi", mode: wake.Sleep, status: want})
	tok, _ := bearer.IssuePurpose(s.op, s.origin, bearer.PurposeFleet, t0, time.Minute)
	a := s.do(t, "GET", "/fleet/api/devices/"+dev.DID().String(), map[string]string{"Authorization": "Bearer " + tok}, nil)
	var got operatorapi.Device
	if err := json.Unmarshal([]byte(a.body), &got); err != nil || got.Install == nil || got.OSUpdate == nil || got.OSInstall == nil {
		t.Fatalf("API device: %d %s", a.status, a.body)
	}
	if !got.Install.At.Equal(want.Install.At) || got.Install.Reason != want.Install.Reason || *got.OSUpdate != *want.OSUpdate ||
		got.OSInstall.Reason != want.OSInstall.Reason || !got.UpdateTrouble() {
		t.Errorf("API device: install %+v, osUpdate %+v, osInstall %+v", got.Install, got.OSUpdate, got.OSInstall)
	}
	for _, member := range []string{`"install":{"result":"rolled-back","version":"1.4.0","from":"1.3.2"`, `"osUpdate":{"outcome":"up-to-date"`,
		`"osInstall":{"result":"failed","version":"5"`} {
		if !strings.Contains(a.body, member) {
			t.Errorf("API device lacks %s:\n%s", member, a.body)
		}
	}
	d, err := s.src.One(context.Background(), s.dev.DID().String(), t0)
	if err != nil || d.Install != nil || d.OSUpdate != nil || d.OSInstall != nil || d.UpdateTrouble() {
		t.Errorf("a device without a status: %+v, %v", d, err)
	}
}

// TestUpdateOutcomesOnDevicePage: the device page shows the version, the
// last check (outcome, reason, version, target, bytes, detail) and the
// last install (rolled back, version, from, when, why) of the build and
// of OS bundles, the device's text escaped; a device that reported none
// says so.
func TestUpdateOutcomesOnDevicePage(t *testing.T) {
	s := newSite(t, "")
	dev := didtest.Key(t, 2)
	s.put(t, device{key: dev, name: "pi", mode: wake.Sleep, status: outcomes()})
	c := s.login(t)
	a := s.do(t, "GET", "/fleet/device/"+dev.DID().String(), nil, c)
	for _, want := range []string{
		`<td class="version">1.3.2</td>`,
		`<span class="warn">refused</span> · <span class="reason">freeze</span> · version 3 · <code>torpor-agent/3/linux-armv6</code> · 12.0 KiB fetched`,
		"freeze: timestamp &lt;b&gt;is&lt;/b&gt; older than the trusted one",
		`<span class="warn">rolled back</span> <strong>1.4.0</strong> (from 1.3.2) · <time datetime="2026-01-15T09:00:00Z"`,
		"no proof in 3 starts: start 1: exited with status 2",
		`<th>last OS bundle check</th><td>up-to-date · version 4 · <code>os/4/rpi-arm64</code></td>`,
		`<span class="warn">failed</span> <strong>5</strong> · <time`, "signature verification failed",
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the device page lacks %q:\n%s", want, a.body)
		}
	}
	if strings.Contains(a.body, "<b>is</b>") {
		t.Error("the device's detail is not escaped")
	}
	a = s.do(t, "GET", "/fleet/device/"+s.dev.DID().String(), nil, c)
	if !strings.Contains(a.body, "reports no update check or install") || strings.Contains(a.body, "last install") {
		t.Errorf("a device without outcomes: %d\n%s", a.status, a.body)
	}
}

// TestFleetRowUpdateMark: the fleet's row marks a device whose install
// rolled back or whose check was refused, linking to its page and saying
// why in its title; an installed device has no mark.
func TestFleetRowUpdateMark(t *testing.T) {
	s := newSite(t, "")
	bad, good := didtest.Key(t, 2), didtest.Key(t, 3)
	s.put(t, device{key: bad, name: "bad", mode: wake.Sleep, status: outcomes()})
	s.put(t, device{key: good, name: "good", mode: wake.Sleep, status: &wire.Status{Version: "1.4.0",
		Install: &wire.StatusInstall{Result: wire.InstallInstalled, Version: "1.4.0", From: "1.3.2", At: t0},
		Update:  &wire.StatusUpdate{Outcome: wire.UpdateUpToDate}}})
	a := s.do(t, "GET", "/fleet/rows", nil, s.login(t))
	row := func(k interface{ DID() did.DID }) string {
		_, r, _ := strings.Cut(a.body, `id="row-`+k.DID().String()+`"`)
		r, _, _ = strings.Cut(r, "</tr>")
		return r
	}
	want := `<a href="/fleet/device/` + bad.DID().String() + `#software" class="upd-bad" title="last install of 1.4.0 rolled back: no proof in 3 starts: start 1: exited with status 2; ` +
		`last update check refused: freeze; last OS bundle 5 failed: signature verification failed">rolled back, update refused, OS install failed</a>`
	if r := row(bad); !strings.Contains(r, want) || !strings.Contains(r, `<span class="version">1.3.2</span>`) {
		t.Errorf("the rolled-back device's row:\n%s\nwant\n%s", r, want)
	}
	if r := row(good); strings.Contains(r, "upd-bad") || !strings.Contains(r, `<span class="version">1.4.0</span>`) {
		t.Errorf("the installed device's row:\n%s", r)
	}
}

// TestMarkOf: each outcome that goes wrong alone gives its mark; the
// others none.
func TestMarkOf(t *testing.T) {
	for _, tc := range []struct {
		d    operatorapi.Device
		want string
	}{
		{operatorapi.Device{}, ""},
		{operatorapi.Device{Update: &wire.StatusUpdate{Outcome: wire.UpdateHeld, Reason: "needs-confirmation"}}, ""},
		{operatorapi.Device{Update: &wire.StatusUpdate{Outcome: wire.UpdateVerified}, Install: &wire.StatusInstall{Result: wire.InstallInstalled}}, ""},
		{operatorapi.Device{Install: &wire.StatusInstall{Result: wire.InstallRolledBack, Version: "2"}}, "rolled back|last install of 2 rolled back"},
		{operatorapi.Device{Update: &wire.StatusUpdate{Outcome: wire.UpdateRefused}}, "update refused|last update check refused"},
		{operatorapi.Device{OSUpdate: &wire.StatusUpdate{Outcome: wire.UpdateRefused, Reason: "expired"}}, "OS update refused|last OS bundle check refused: expired"},
		{operatorapi.Device{OSInstall: &wire.StatusInstall{Result: wire.InstallInstalled}}, ""},
	} {
		m := markOf(tc.d)
		got := m.Label + "|" + m.Title
		if got == "|" {
			got = ""
		}
		if got != tc.want || (got != "") != tc.d.UpdateTrouble() {
			t.Errorf("markOf(%+v) = %q (trouble %v); want %q", tc.d, got, tc.d.UpdateTrouble(), tc.want)
		}
	}
}
