//go:build integration

package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/device"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// putStatus writes a device named name into the world's relay with a
// status it signed, as its link would have, and returns its DID.
func (w *world) putStatus(t *testing.T, name string, ws wire.Status) string {
	t.Helper()
	key, _ := did.Generate(nil)
	id, now := key.DID().String(), w.clk.Now()
	o, err := governed.Sign(key, governed.Template{IssuedAt: now, Semantic: governed.Semantic{Schema: wire.StatusSchema}, Purpose: wire.PurposeStatus, Payload: ws})
	if err != nil {
		t.Fatal(err)
	}
	st := agents.State{Mode: wake.Sleep, Window: wake.WindowFor(id), NextWake: now.Add(40 * time.Minute), UpdatedAt: now.Add(-5 * time.Minute),
		Card: []byte(`{"name":"` + name + `"}`)}
	st.Status, _ = o.MarshalJSON()
	if err := w.relay.States.Put(context.Background(), id, st, nil, nil); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestUpdateOutcomesInBrowser: a device whose last install rolled back
// and whose last check was refused carries a mark in the fleet's table,
// and its page, opened from the mark, says its version, the refused check
// and the rolled-back install, and its OS bundles' check and install, as
// a person reads them (the device's markup shown as text); an installed
// device has no mark and its page says installed. At a phone's 390 px
// the page does not scroll sideways. Screenshots of the table and the
// page.
func TestUpdateOutcomesInBrowser(t *testing.T) {
	w := newWorld(t)
	at := w.clk.Now().Add(-3 * time.Hour)
	bad := w.putStatus(t, "north-gate", wire.Status{Version: "1.3.2", Board: "rpi-zero",
		Update: &wire.StatusUpdate{Outcome: wire.UpdateRefused, Target: "torpor-agent/3/linux-armv6", Version: 3, Reason: "freeze",
			Detail: "freeze: the relay's timestamp (version 41) is older than the trusted one (version 42) <b>replayed</b>", Bytes: 0},
		Install: &wire.StatusInstall{Result: wire.InstallRolledBack, Version: "1.4.0", From: "1.3.2", At: at,
			Reason: "no proof in 3 starts: start 1: exited with status 2; start 2: exited with status 2; start 3: exited with status 2"},
		OSUpdate:  &wire.StatusUpdate{Outcome: wire.UpdateUpToDate, Target: "os/4/rpi-arm64", Version: 4},
		OSInstall: &wire.StatusInstall{Result: wire.InstallInstalled, Version: "4", At: at.Add(-24 * time.Hour)}})
	good := w.putStatus(t, "pump-house", wire.Status{Version: "1.4.0", Board: "rpi4",
		Update:  &wire.StatusUpdate{Outcome: wire.UpdateVerified, Target: "torpor-agent/3/linux-arm64", Version: 3, Bytes: 3 << 20},
		Install: &wire.StatusInstall{Result: wire.InstallInstalled, Version: "1.4.0", From: "1.3.2", At: at}})
	b := newBrowser(t)
	b.do(t, "login", chromedp.Navigate(w.loginURL(t, w.op)), chromedp.WaitVisible(chromedp.CSS("table.fleet")))
	badRow := eval[string](t, b, `document.getElementById("row-`+bad+`").innerText`)
	goodRow := eval[string](t, b, `document.getElementById("row-`+good+`").innerText`)
	if !strings.Contains(badRow, "1.3.2") || !strings.Contains(badRow, "rolled back, update refused") {
		t.Errorf("north-gate's row reads %q; want its version and the mark", badRow)
	}
	if !strings.Contains(goodRow, "1.4.0") || strings.Contains(goodRow, "rolled back") || strings.Contains(goodRow, "refused") {
		t.Errorf("pump-house's row reads %q; want its version and no mark", goodRow)
	}
	if title := eval[string](t, b, `document.querySelector('[id="row-`+bad+`"] a.upd-bad').title`); !strings.Contains(title, "last install of 1.4.0 rolled back: no proof in 3 starts") {
		t.Errorf("the mark's title is %q", title)
	}
	b.screenshot(t, "fleet-updates")
	b.do(t, "the mark opens the device page", clickLive(`[id="row-`+bad+`"] a.upd-bad`), chromedp.WaitVisible(chromedp.CSS("#software")))
	checkBadOutcomes(t, b)
	b.screenshot(t, "fleet-device-updates")
	b.do(t, "phone", chromedp.Emulate(device.IPhone13), chromedp.Navigate(w.relay.URL+"/fleet/device/"+bad), chromedp.WaitVisible(chromedp.CSS("#software")))
	if sw, iw := eval[int](t, b, `document.documentElement.scrollWidth`), eval[int](t, b, `window.innerWidth`); iw != 390 || sw > iw {
		t.Errorf("phone, north-gate's page: %d px wide in a %d px window", sw, iw)
	}
	b.screenshot(t, "fleet-device-updates-phone")
	b.do(t, "desktop again", chromedp.EmulateReset(), chromedp.EmulateViewport(1280, 900))
	b.do(t, "the installed device", chromedp.Navigate(w.relay.URL+"/fleet/device/"+good), chromedp.WaitVisible(chromedp.CSS("#software")))
	sw := eval[string](t, b, `document.getElementById("software").innerText`)
	for _, want := range []string{"version\t1.4.0", "last update check\tverified, ready to install · version 3 · torpor-agent/3/linux-arm64 · 3.0 MiB fetched",
		"last install\tinstalled 1.4.0 (from 1.3.2) · "} {
		if !strings.Contains(sw, want) {
			t.Errorf("pump-house's page reads\n%s\nwant %q", sw, want)
		}
	}
	if strings.Contains(sw, "OS bundle") || eval[int](t, b, `document.querySelectorAll("#software .warn").length`) != 0 {
		t.Errorf("pump-house's page flags something or shows OS bundles it did not report:\n%s", sw)
	}
}

// checkBadOutcomes: north-gate's page reads its version, the refused
// check with its reason and detail (the device's markup as text), the
// rolled-back install with its versions, time and reason, flagged, and
// its OS bundles' check and install.
func checkBadOutcomes(t *testing.T, b *browser) {
	t.Helper()
	if p := eval[string](t, b, `location.pathname + location.hash`); !strings.HasSuffix(p, "#software") {
		t.Errorf("the mark opened %s", p)
	}
	sw := eval[string](t, b, `document.getElementById("software").innerText`)
	for _, want := range []string{
		"Version and updates", "version\t1.3.2",
		"last update check\trefused · freeze · version 3 · torpor-agent/3/linux-armv6",
		"freeze: the relay's timestamp (version 41) is older than the trusted one (version 42) <b>replayed</b>",
		"last install\trolled back 1.4.0 (from 1.3.2) · ",
		"no proof in 3 starts: start 1: exited with status 2; start 2",
		"last OS bundle check\tup-to-date · version 4 · os/4/rpi-arm64",
		"last OS bundle install\tinstalled 4 · ",
	} {
		if !strings.Contains(sw, want) {
			t.Errorf("north-gate's page reads\n%s\nwant %q", sw, want)
		}
	}
	if n := eval[int](t, b, `document.querySelectorAll("#software b").length`); n != 0 {
		t.Errorf("the device's markup made %d elements", n)
	}
	if warns := eval[string](t, b, `[...document.querySelectorAll("#software .warn")].map(e => e.textContent).join("/")`); warns != "refused/rolled back" {
		t.Errorf("flagged on north-gate's page: %q; want refused/rolled back", warns)
	}
	if c := eval[string](t, b, `getComputedStyle(document.querySelector("#software .warn")).color`); c != "rgb(180, 35, 24)" {
		t.Errorf("a flagged outcome is coloured %s, want the overdue red", c)
	}
}
