//go:build integration

package tenants

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/torpor-dev/torpor/did"
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
