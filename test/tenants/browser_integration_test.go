//go:build integration

package tenants

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// TestTenantConsolesInBrowser: each tenant's operator logs in to the
// fleet console of the one relay in a real browser (Debian's chromium)
// and sees exactly its own tenant's devices and no link to the audit log;
// a screenshot of each.
func TestTenantConsolesInBrowser(t *testing.T) {
	path := testenv.RequireTool(t, "chromium")
	w := newWorld(t)
	devs := map[string][]*did.PrivateKey{
		"opA": {w.enrol(t, "ownerA"), w.enrol(t, "ownerA")},
		"opB": {w.enrol(t, "ownerB")},
	}
	for op, shot := range map[string]string{"opA": "tenants-console-a", "opB": "tenants-console-b"} {
		ctx := browser(t, path)
		tok, err := bearer.IssuePurpose(w.keys[op], w.relay.URL, bearer.PurposeFleetLogin, time.Now(), 2*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		run(t, ctx, op+" logs in", chromedp.Navigate(w.relay.URL+"/fleet/login?token="+url.QueryEscape(tok)), chromedp.WaitVisible(chromedp.CSS("table.fleet")))
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.fleet tbody tr[data-state]")].map(r => r.id)`))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, d := range devs[op] {
			want["row-"+d.DID().String()] = true
		}
		if len(rows) != len(want) {
			t.Errorf("%s's console has rows %v, want its %d devices", op, rows, len(want))
		}
		for _, r := range rows {
			if !want[r] {
				t.Errorf("%s's console shows %s, not its tenant's", op, r)
			}
		}
		if link, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('header a[href="/fleet/audit"]') !== null`)); err != nil || link {
			t.Errorf("%s's console links the audit log (%v), which is the host's", op, err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(testenv.Artifacts(t, "torpor-browser"), shot+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
}

// browser starts a headless chromium at path, closed when the test ends.
func browser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 700))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// run runs steps in ctx, bounded by a minute.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestTenantsPageInBrowser: the host logs in to the console in a real
// browser, follows the header's link to the page of tenants and sees
// both tenants with their counts and totals, a link to b's devices (its
// owner allows it) and none of a's device DIDs; a screenshot
// (tenants-console-host.png in TORPOR_ARTIFACTS).
func TestTenantsPageInBrowser(t *testing.T) {
	path := testenv.RequireTool(t, "chromium")
	w := newWorld(t)
	w.ok(t, "tenant", "operators", "--upload", "--host-sees-devices", "--relay", w.relay.URL, "--key", w.files["ownerB"], w.keys["opB"].DID().String())
	devsA := []*did.PrivateKey{w.enrol(t, "ownerA"), w.enrol(t, "ownerA"), w.enrol(t, "ownerA")}
	devB := w.enrol(t, "ownerB")
	w.enrol(t, "ownerA") // past a's quota of 3: in no tenant, on probation
	for i, d := range []*did.PrivateKey{devsA[0], devsA[0], devB} {
		sender, _ := did.Generate(nil)
		if a := relaytest.Send(w.relay.URL, d.DID(), sender, "page"+string(rune('0'+i)), "x"); a.Status != 503 || !a.Queued {
			t.Fatalf("send to %s: %+v", d.DID(), a)
		}
	}
	c, _ := relaytest.Dial(t, w.relay.URL, devsA[1]) // linked: awake
	defer c.Close()
	ctx := browser(t, path)
	tok, err := bearer.IssuePurpose(w.keys["host"], w.relay.URL, bearer.PurposeFleetLogin, time.Now(), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "the host logs in", chromedp.Navigate(w.relay.URL+"/fleet/login?token="+url.QueryEscape(tok)), chromedp.WaitVisible(chromedp.CSS("table.fleet")),
		chromedp.Click(chromedp.CSS(`header a[href="/fleet/tenants"]`)), chromedp.WaitVisible(chromedp.CSS("table.tenants")))
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.tenants tbody tr")].map(r => r.id + " " + r.innerText.replace(/\s+/g, " "))`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tenant-" + w.keys["ownerA"].DID().String(): "3 of 3 1 0 0 0 2", "tenant-" + w.keys["ownerB"].DID().String(): "1 0 0 0 0 1"}
	if len(rows) != 2 {
		t.Fatalf("the page of tenants has rows %q, want a's and b's", rows)
	}
	for _, r := range rows {
		id, text, _ := strings.Cut(r, " ")
		if !strings.Contains(text, want[id]) {
			t.Errorf("row %s: %q, want the devices and states %q", id, text, want[id])
		}
	}
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devsA {
		if strings.Contains(html, d.DID().String()) {
			t.Errorf("the page of tenants names a's device %s", d.DID())
		}
	}
	if !strings.Contains(html, `href="/fleet?tenant=`) {
		t.Error("the page of tenants does not link b's devices, which b's owner lets the host see")
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(testenv.Artifacts(t, "torpor-browser"), "tenants-console-host.png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}
