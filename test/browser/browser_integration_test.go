//go:build integration

package browser

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/device"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/wake"
)

// browser is a headless chromium tab and the URLs it requested.
type browser struct {
	ctx  context.Context
	mu   sync.Mutex
	urls []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := testenv.RequireTool(t, "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	b := &browser{ctx: ctx}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			b.mu.Lock()
			b.urls = append(b.urls, e.Request.URL)
			b.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

// do runs steps, bounded by a minute.
func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// clickLive clicks the element sel finds with the page's own script, in
// one step: the fleet's rows are replaced in place every few seconds
// (console.js), and chromedp.Click, which finds a node and then clicks its
// box, fails ("Could not find node with given id") when a refresh
// replaces the row in between, as it did at load average 8.
func clickLive(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.querySelector(` + strconv.Quote(sel) + `).click()`)
}

// eval returns a JavaScript expression's value.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitState waits until the row of agent shows state, without a reload
// (the marker set on the page survives).
func (b *browser) waitState(t *testing.T, agent did.DID, state string, within time.Duration) {
	t.Helper()
	expr := `(document.getElementById("row-` + agent.String() + `") || {dataset: {}}).dataset.state === "` + state + `"`
	b.do(t, "waiting for "+state, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(within), chromedp.WithPollingInterval(100*time.Millisecond)))
	if !eval[bool](t, b, `window.torporMarker === 1`) {
		t.Fatalf("the page was reloaded while the row turned %s", state)
	}
}

// loginURL is a login link of key for the world's relay, dated on its
// clock, as torporctl fleet open makes it.
func (w *world) loginURL(t *testing.T, key *did.PrivateKey) string {
	t.Helper()
	tok, err := bearer.IssuePurpose(key, w.relay.URL, bearer.PurposeFleetLogin, w.clk.Now(), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return w.relay.URL + "/fleet/login?token=" + url.QueryEscape(tok)
}

// screenshot saves the whole page as name.png in the artifacts.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(testenv.Artifacts(t, "torpor-browser"), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// TestFleetConsoleInBrowser: an operator logs in through the token URL and
// sees the three devices in their true states; a device that goes to
// sleep changes its row, and a stopped device turns overdue after its
// grace, without a reload; screenshots at desktop and phone widths; after
// logout, and for a non-operator, the login page; no request leaves for
// another origin.
func TestFleetConsoleInBrowser(t *testing.T) {
	w := newWorld(t)
	pump := w.startAgent(t, "pump-house", wake.AlwaysOn, time.Time{})
	gate := w.startAgent(t, "north-gate", wake.HourlyWake, time.Time{})
	fence := w.startAgent(t, "fence-12", wake.Sleep, w.clk.Now().Add(3*time.Minute))
	b := newBrowser(t)
	b.do(t, "login", chromedp.Navigate(w.loginURL(t, w.op)), chromedp.WaitVisible(chromedp.CSS("table.fleet")))
	if u := eval[string](t, b, `location.pathname`); u != "/fleet" {
		t.Fatalf("after login the browser is at %s, want /fleet", u)
	}
	b.do(t, "marking the page", chromedp.Evaluate[chromedp.Void](`window.torporMarker = 1`))
	b.waitState(t, pump.key.DID(), "awake", 10*time.Second)
	b.waitState(t, gate.key.DID(), "asleep", 10*time.Second)
	b.waitState(t, fence.key.DID(), "asleep", 10*time.Second)
	if n := eval[int](t, b, `document.querySelectorAll("table.fleet tbody tr[data-state]").length`); n != 3 {
		t.Fatalf("%d rows, want the 3 devices", n)
	}
	alice, bob := didtest.New(t), didtest.New(t)
	for _, from := range []*did.PrivateKey{alice, alice, bob} {
		if code := w.send(t, from, gate.key.DID()); code != http.StatusServiceUnavailable {
			t.Fatalf("send to the sleeping gate: %d, want 503 (queued)", code)
		}
	}
	b.do(t, "the queue in the row", chromedp.Poll[chromedp.Void](`document.getElementById("row-`+gate.key.DID().String()+`").textContent.includes("3 msgs")`,
		chromedp.WithPollingTimeout(10*time.Second)))
	fence.stop() // its battery died: the wake it announced will not come
	if err := pump.SetMode(wake.HourlyWake, time.Time{}); err != nil {
		t.Fatal(err)
	}
	b.waitState(t, pump.key.DID(), "asleep", 20*time.Second)
	b.waitState(t, fence.key.DID(), "overdue", 30*time.Second) // 3 min + 1 min grace at 20x: 12 s
	b.screenshot(t, "fleet-live-desktop")
	w.pastWakes(t, gate.key.DID().String(), 30)
	b.do(t, "device page", chromedp.Navigate(w.relay.URL+"/fleet/device/"+gate.key.DID().String()), chromedp.WaitVisible(chromedp.CSS("main h2")))
	checkHistoryAndHealth(t, b)
	b.screenshot(t, "fleet-device")
	b.do(t, "audit page", chromedp.Click(chromedp.CSS(`header a[href="/fleet/audit"]`)), chromedp.WaitVisible(chromedp.CSS("table#audit")))
	if row := eval[string](t, b, `document.querySelector("table#audit tbody tr").textContent`); !strings.Contains(row, "login") || !strings.Contains(row, "ok") {
		t.Errorf("the audit page's newest row is %q, want the login", row)
	}
	b.screenshot(t, "fleet-audit")
	b.do(t, "phone", chromedp.Emulate(device.IPhone13), chromedp.Navigate(w.relay.URL+"/fleet"), chromedp.WaitVisible(chromedp.CSS("table.fleet")))
	b.screenshot(t, "fleet-live-phone")
	b.do(t, "desktop again", chromedp.EmulateReset(), chromedp.EmulateViewport(1280, 900))
	checkLoggedOut(t, w, b)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.urls {
		if !strings.HasPrefix(u, w.relay.URL+"/") {
			t.Errorf("the browser requested %s, outside the relay's origin", u)
		}
	}
	if len(b.urls) < 5 {
		t.Errorf("the network log has %d requests; it does not record them", len(b.urls))
	}
}

// checkLoggedOut: after logout the console shows the login page, and a
// non-operator's login link is refused with the login page.
func checkLoggedOut(t *testing.T, w *world, b *browser) {
	t.Helper()
	b.do(t, "logout", chromedp.Navigate(w.relay.URL+"/fleet"), chromedp.Click(chromedp.CSS("header form button")),
		chromedp.WaitVisible(chromedp.CSS("main.login")))
	b.do(t, "after logout", chromedp.Navigate(w.relay.URL+"/fleet"), chromedp.WaitVisible(chromedp.CSS("main.login")))
	if n := eval[int](t, b, `document.querySelectorAll("table.fleet").length`); n != 0 {
		t.Error("a logged-out browser sees the fleet")
	}
	stranger, _ := did.Generate(nil)
	b.do(t, "non-operator login", chromedp.Navigate(w.loginURL(t, stranger)), chromedp.WaitVisible(chromedp.CSS("main.login")))
	if why := eval[string](t, b, `document.querySelector(".why").textContent`); !strings.Contains(why, "not an operator") {
		t.Errorf("non-operator's login page says %q", why)
	}
	b.screenshot(t, "fleet-login-refused")
	b.do(t, "non-operator fleet", chromedp.Navigate(w.relay.URL+"/fleet"), chromedp.WaitVisible(chromedp.CSS("main.login")))
}

// pastWakes records n hourly wakes of agent before the test's, as its
// relay would have: a queue that grows at each wake, awake times that
// vary, and some missed windows.
func (w *world) pastWakes(t *testing.T, agent string, n int) {
	t.Helper()
	first := w.clk.Now().Add(-time.Duration(n+1) * time.Hour)
	for i := range n {
		wk := agents.Wake{At: first.Add(time.Duration(i) * time.Hour), Reason: "timer", AwakeMs: int64(2000 + 700*(i%5)),
			Drained: i % 4, QueueDepth: i / 3, Missed: i % 9 / 8, Relay: w.relay.URL}
		if err := w.relay.States.RecordWake(context.Background(), agent, wk); err != nil {
			t.Fatal(err)
		}
	}
}

// checkHistoryAndHealth: the device page draws the history's three
// sparklines, each a path with its least, largest and last value, and
// the health the device's signed status reported (this machine's uptime
// and the free space of the agent's data directory).
func checkHistoryAndHealth(t *testing.T, b *browser) {
	t.Helper()
	if h := eval[string](t, b, `document.querySelector("#history h2").textContent`); !strings.HasPrefix(h, "History (3") {
		t.Errorf("the history says %q, want the 30 recorded wakes and the test's own", h)
	}
	paths := eval[[]string](t, b, `[...document.querySelectorAll("#history figure.spark svg path")].map(p => p.getAttribute("d"))`)
	if len(paths) != 3 {
		t.Fatalf("%d sparklines, want queue depth, awake time and missed windows", len(paths))
	}
	for i, d := range paths {
		if strings.Count(d, "L") < 20 {
			t.Errorf("sparkline %d is %q, want a line through every wake", i, d)
		}
	}
	if title := eval[string](t, b, `document.querySelector("#history svg title").textContent`); !strings.Contains(title, "min ") || !strings.Contains(title, "last ") {
		t.Errorf("the first sparkline's title is %q, want its least, largest and last value", title)
	}
	health := eval[string](t, b, `document.getElementById("health").textContent`)
	if !strings.Contains(health, "up ") || !strings.Contains(health, " free of ") {
		t.Errorf("the health section says %q, want the uptime and the free flash", health)
	}
}
