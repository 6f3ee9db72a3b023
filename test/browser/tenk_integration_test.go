//go:build integration

package browser

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestFleetTenThousandInBrowser: a fleet of 10,000 devices in the
// console: the first page shows 50 rows and the summary of all 10,000, the
// pages are counted, the last page holds the last 50, and a search finds
// one device among them. The server's time for the first page is
// measured in make bench (console BenchmarkFleet10k), not here.
func TestFleetTenThousandInBrowser(t *testing.T) {
	w := newWorld(t)
	start := time.Now()
	w.putDevices(t, 10000)
	t.Logf("10,000 devices written in %v", time.Since(start).Round(time.Millisecond))
	b := newBrowser(t)
	b.do(t, "login", chromedp.Navigate(w.loginURL(t, w.op)), chromedp.WaitVisible(chromedp.CSS("table.fleet")))
	if n, sum := rowCount(t, b), eval[string](t, b, `document.getElementById("summary").textContent`); n != 50 || !strings.HasPrefix(sum, "10000 devices") {
		t.Fatalf("first page: %d rows, summary %q; want 50 rows of 10000 devices", n, sum)
	}
	if page := eval[string](t, b, `document.getElementById("page").textContent`); page != "page 1 of 200" {
		t.Errorf("the first page says %q, want page 1 of 200", page)
	}
	b.do(t, "last page", chromedp.Navigate(w.relay.URL+"/fleet?sort=name&page=200"), chromedp.WaitVisible(chromedp.CSS(`a[rel=prev]`)))
	if n, page, last := rowCount(t, b), eval[string](t, b, `document.getElementById("page").textContent`),
		eval[string](t, b, `[...document.querySelectorAll("table.fleet tbody tr a")].pop().textContent`); n != 50 || page != "page 200 of 200" || last != "pump-9999" {
		t.Errorf("last page: %d rows, %q, last %q; want 50 rows, page 200 of 200, pump-9999", n, page, last)
	}
	if n := eval[int](t, b, `document.querySelectorAll("a[rel=next]").length`); n != 0 {
		t.Error("the last page links to a next page")
	}
	b.do(t, "search one", chromedp.Navigate(w.relay.URL+"/fleet"), chromedp.WaitVisible(chromedp.CSS(`input[name=q]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=q]`), "pump-4242"), chromedp.Submit(chromedp.CSS(`input[name=q]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.search a[href="/fleet"]`)))
	if n, name := rowCount(t, b), eval[string](t, b, `document.querySelector("table.fleet tbody tr a").textContent`); n != 1 || name != "pump-4242" {
		t.Errorf("search pump-4242: %d rows, first %q; want that one device", n, name)
	}
}
