//go:build integration

package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/device"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// kathmandu is the browser's time zone in TestFleetSearchInBrowser: UTC
// +05:45 all year, so that a local time cannot pass for UTC.
var kathmandu = time.FixedZone("Asia/Kathmandu", 5*3600+45*60)

// putDevices writes n devices' states and signed statuses into the
// world's relay, as their links would have: pump-00 … asleep, every
// seventh overdue (its wake 77 minutes late) and every eleventh halted.
func (w *world) putDevices(t *testing.T, n int) {
	t.Helper()
	now := w.clk.Now()
	for i := range n {
		key, _ := did.Generate(nil)
		id := key.DID().String()
		st := agents.State{Mode: wake.Sleep, Window: wake.WindowFor(id), NextWake: now.Add(40 * time.Minute), UpdatedAt: now.Add(-time.Hour),
			Card: fmt.Appendf(nil, `{"name":"pump-%02d"}`, i)}
		if i%7 == 3 {
			st.NextWake = now.Add(-77 * time.Minute)
		}
		ws := wire.Status{Version: "1.4", Board: "rpi4", Halted: i%11 == 5}
		o, err := governed.Sign(key, governed.Template{IssuedAt: now, Semantic: governed.Semantic{Schema: wire.StatusSchema}, Purpose: wire.PurposeStatus, Payload: ws})
		if err != nil {
			t.Fatal(err)
		}
		st.Status, _ = o.MarshalJSON()
		if err := w.relay.States.Put(context.Background(), id, st, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// rowCount is how many device rows the table shows.
func rowCount(t *testing.T, b *browser) int {
	return eval[int](t, b, `document.querySelectorAll("table.fleet tbody tr[data-state]").length`)
}

// TestFleetSearchInBrowser: with 60 devices the page shows 50 and the
// summary of all 60; the search form narrows the table; the next page
// holds the other 10; times are in the browser's zone (UTC in their
// title); an overdue row says since when, and looks unlike a halted one;
// at a phone's 390 px nothing scrolls sideways. Screenshots at both
// widths.
func TestFleetSearchInBrowser(t *testing.T) {
	w := newWorld(t)
	w.putDevices(t, 60)
	b := newBrowser(t)
	if _, err := chromedp.Call(b.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Kathmandu"}); err != nil {
		t.Fatalf("time zone: %v", err)
	}
	b.do(t, "login", chromedp.Navigate(w.loginURL(t, w.op)), chromedp.WaitVisible(chromedp.CSS("table.fleet")))
	if n, sum := rowCount(t, b), eval[string](t, b, `document.getElementById("summary").textContent`); n != 50 || !strings.HasPrefix(sum, "60 devices") {
		t.Fatalf("first page: %d rows, summary %q; want 50 rows of 60 devices", n, sum)
	}
	checkLocalTimes(t, b)
	checkOverdueAndHalted(t, b)
	b.do(t, "a short page", chromedp.Navigate(w.relay.URL+"/fleet?per=14"), chromedp.WaitVisible(chromedp.CSS("time[data-local]")))
	b.screenshot(t, "fleet-desktop")
	b.do(t, "search", chromedp.SendKeys(chromedp.CSS(`input[name=q]`), "PUMP-1"), chromedp.Submit(chromedp.CSS(`input[name=q]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.search a[href="/fleet"]`)))
	if n, q := rowCount(t, b), eval[string](t, b, `location.search`); n != 10 || !strings.Contains(q, "q=PUMP-1") {
		t.Errorf("search PUMP-1 at %s: %d rows, want pump-10 … pump-19", q, n)
	}
	b.do(t, "all again", chromedp.Navigate(w.relay.URL+"/fleet?sort=name"), chromedp.WaitVisible(chromedp.CSS("table.fleet")))
	b.do(t, "next page", chromedp.Click(chromedp.CSS(`a[rel=next]`)), chromedp.WaitVisible(chromedp.CSS(`a[rel=prev]`)))
	if n, page, first := rowCount(t, b), eval[string](t, b, `document.getElementById("page").textContent`),
		eval[string](t, b, `document.querySelector("table.fleet tbody tr a").textContent`); n != 10 || page != "page 2 of 2" || first != "pump-50" {
		t.Errorf("page 2: %d rows, %q, first %s; want 10 rows, page 2 of 2, pump-50", n, page, first)
	}
	b.do(t, "phone", chromedp.Emulate(device.IPhone13), chromedp.Navigate(w.relay.URL+"/fleet"), chromedp.WaitVisible(chromedp.CSS("table.fleet")))
	if sw, iw := eval[int](t, b, `document.documentElement.scrollWidth`), eval[int](t, b, `window.innerWidth`); iw != 390 || sw > iw {
		t.Errorf("phone: the page is %d px wide in a %d px window", sw, iw)
	}
	if c := eval[string](t, b, `document.querySelector("small.did button").dataset.copy`); !strings.HasPrefix(c, "did:key:z6Mk") {
		t.Errorf("the DID's copy button copies %q", c)
	}
	b.do(t, "a short page", chromedp.Navigate(w.relay.URL+"/fleet?per=5"), chromedp.WaitVisible(chromedp.CSS("time[data-local]")))
	b.screenshot(t, "fleet-phone")
	b.do(t, "a device on the phone", clickLive("table.fleet tbody tr a"), chromedp.WaitVisible(chromedp.CSS("button[data-copy]")))
	if sw, iw := eval[int](t, b, `document.documentElement.scrollWidth`), eval[int](t, b, `window.innerWidth`); iw != 390 || sw > iw {
		t.Errorf("phone, device page: %d px wide in a %d px window", sw, iw) // a page too wide widens the window
	}
}

// checkLocalTimes: the "as of" time is the browser's (Kathmandu's) and
// its title the same instant in UTC.
func checkLocalTimes(t *testing.T, b *browser) {
	t.Helper()
	b.do(t, "local times", chromedp.Poll[chromedp.Void](`document.querySelector("time[data-local]") !== null`, chromedp.WithPollingTimeout(10*time.Second)))
	dt := eval[string](t, b, `document.querySelector("p.muted time").getAttribute("datetime")`)
	at, err := time.Parse(time.RFC3339, dt)
	if err != nil {
		t.Fatal(err)
	}
	text, title := eval[string](t, b, `document.querySelector("p.muted time").textContent`), eval[string](t, b, `document.querySelector("p.muted time").title`)
	if want := at.In(kathmandu).Format("2006-01-02 15:04"); text != want || title != "UTC "+at.UTC().Format("2006-01-02 15:04:05") {
		t.Errorf("time %s shows %q, title %q; want %q in Kathmandu, UTC in the title", dt, text, title, want)
	}
}

// checkOverdueAndHalted: an overdue row says when it was expected (local
// time) and how late; overdue and halted rows differ in class, word and
// colour.
func checkOverdueAndHalted(t *testing.T, b *browser) {
	t.Helper()
	why := eval[string](t, b, `document.querySelector("tr.row-overdue .why").textContent`)
	if !strings.HasPrefix(why, "expected ") || !strings.HasSuffix(why, " min late") || strings.Contains(why, "UTC") {
		t.Errorf("an overdue row says %q, want \"expected HH:MM, N min late\" in local time", why)
	}
	words := eval[string](t, b, `document.querySelector("tr.row-overdue .state").textContent + "/" + document.querySelector("tr.row-halted .state").textContent`)
	colours := eval[string](t, b, `getComputedStyle(document.querySelector("tr.row-overdue .state")).backgroundColor + "/" + getComputedStyle(document.querySelector("tr.row-halted .state")).backgroundColor`)
	if words != "overdue/halted" || strings.Split(colours, "/")[0] == strings.Split(colours, "/")[1] {
		t.Errorf("overdue and halted rows: words %q, colours %q; want each its word and colour", words, colours)
	}
}
