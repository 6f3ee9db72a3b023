package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/wake"
)

// putFleet puts n devices named dev-00 … with version 1.(i%2), every
// third overdue, the others asleep, and the card tag "site-(i%3)".
func putFleet(t *testing.T, f *fixture, n int) {
	t.Helper()
	for i := range n {
		k := didtest.Key(t, byte(100+i))
		next := t0.Add(time.Hour)
		if i%3 == 0 {
			next = t0.Add(-time.Hour)
		}
		f.put(t, device{key: k, name: fmt.Sprintf("dev-%02d", i), mode: wake.Sleep, next: next, status: &wire.Status{Version: fmt.Sprintf("1.%d", i%2)}})
		st, err := f.states.Get(context.Background(), k.DID().String())
		if err != nil {
			t.Fatal(err)
		}
		st.Card = fmt.Appendf(nil, `{"name":"dev-%02d","skills":[{"id":"a","tags":["site-%d","x"]},{"id":"b","tags":["x"]}]}`, i, i%3)
		if err := f.states.Put(context.Background(), k.DID().String(), st, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestQueryFiltersAndPages: each filter narrows the devices and Total
// counts them, the summary counts the whole fleet whatever the filter,
// pages cut the sorted match, and the tags are the card's skills' tags.
func TestQueryFiltersAndPages(t *testing.T) {
	f := newFixture(t)
	putFleet(t, f, 12)
	for _, tt := range []struct {
		q     operatorapi.Query
		total int
		first string
	}{
		{operatorapi.Query{}, 12, "dev-00"},
		{operatorapi.Query{Q: "DEV-1"}, 2, "dev-10"},
		{operatorapi.Query{State: operatorapi.StateOverdue}, 4, "dev-00"},
		{operatorapi.Query{State: operatorapi.StateAsleep, Version: "1.1"}, 4, "dev-01"},
		{operatorapi.Query{Tag: "site-2"}, 4, "dev-02"},
		{operatorapi.Query{Tag: "site"}, 0, ""},
		{operatorapi.Query{Per: 5, Page: 3}, 12, "dev-10"},
		{operatorapi.Query{Per: 5, Page: 2, Sort: operatorapi.SortName}, 12, "dev-05"},
	} {
		fl, err := f.src.Query(context.Background(), t0, tt.q)
		if err != nil {
			t.Fatal(err)
		}
		if fl.Total != tt.total || fl.Summary.Devices != 12 || fl.Summary.Overdue != 4 {
			t.Errorf("%+v: total %d, summary %+v; want %d of 12 (4 overdue)", tt.q, fl.Total, fl.Summary, tt.total)
		}
		if got := ""; len(fl.Devices) > 0 {
			got = fl.Devices[0].Name
			if got != tt.first {
				t.Errorf("%+v: first row %s, want %s", tt.q, got, tt.first)
			}
		} else if tt.first != "" {
			t.Errorf("%+v: no rows, want %s first", tt.q, tt.first)
		}
	}
	fl, _ := f.src.Query(context.Background(), t0, operatorapi.Query{Per: 5, Page: 3})
	if fl.Page != 3 || fl.Pages != 3 || fl.Per != 5 || len(fl.Devices) != 2 {
		t.Errorf("page 3 of 5 rows: page %d of %d, per %d, %d rows; want 3 of 3, 5, 2", fl.Page, fl.Pages, fl.Per, len(fl.Devices))
	}
	if d := fl.Devices[0]; strings.Join(d.Tags, ",") != "site-1,x" || d.KeyPackages.Left != 0 {
		t.Errorf("tags %q, want the skills' tags once each, sorted", d.Tags)
	}
}

// TestVerifiedRemembers: a document is verified once while its bytes
// stay the same; new bytes (a forged status) are verified anew, and the
// verdicts stay within their bound.
func TestVerifiedRemembers(t *testing.T) {
	f := newFixture(t)
	k := didtest.Key(t, 1)
	f.put(t, device{key: k, name: "pump", mode: wake.Sleep, next: t0.Add(time.Hour), status: &wire.Status{Version: "1.0"}})
	v := NewVerified(2)
	f.src.Verified = v
	for range 2 {
		fl, err := f.src.Build(context.Background(), t0)
		if err != nil || fl.Devices[0].Version != "1.0" || fl.Devices[0].StatusError != "" {
			t.Fatalf("build: %+v, %v", fl.Devices, err)
		}
	}
	if v.Len() != 2 { // the status and the card
		t.Errorf("%d verdicts, want 2", v.Len())
	}
	st, _ := f.states.Get(context.Background(), k.DID().String())
	forged, _ := governed.Sign(didtest.Key(t, 2), governed.Template{IssuedAt: t0, Semantic: governed.Semantic{Schema: wire.StatusSchema}, Purpose: wire.PurposeStatus, Payload: wire.Status{Version: "6.6"}})
	st.Status, _ = forged.MarshalJSON()
	if err := f.states.Put(context.Background(), k.DID().String(), st, nil, nil); err != nil {
		t.Fatal(err)
	}
	fl, _ := f.src.Build(context.Background(), t0)
	if d := fl.Devices[0]; d.Version != "" || d.StatusError == "" {
		t.Errorf("a forged status after a good one: version %q, error %q", d.Version, d.StatusError)
	}
	putFleet(t, f, 3)
	f.src.Build(context.Background(), t0)
	if v.Len() > 2 {
		t.Errorf("%d verdicts, bound 2", v.Len())
	}
}

// TestFleetQueryHTTP: the API answers totals and page info and, without
// page or per, every device; the page shows the whole fleet's summary, a
// search form, and pages; bad parameters get 400 saying why.
func TestFleetQueryHTTP(t *testing.T) {
	s := newSite(t, "")
	putFleet(t, s.fixture, 60)
	c := s.login(t)
	var f operatorapi.Fleet
	a := s.do(t, "GET", "/fleet/api/devices", nil, c)
	if err := json.Unmarshal([]byte(a.body), &f); err != nil || len(f.Devices) != 61 || f.Total != 61 || f.Pages != 1 {
		t.Fatalf("API without paging: %d devices, total %d, %v", len(f.Devices), f.Total, err)
	}
	a = s.do(t, "GET", "/fleet/api/devices?state=overdue&per=7&page=2", nil, c)
	if err := json.Unmarshal([]byte(a.body), &f); err != nil || len(f.Devices) != 7 || f.Total != 20 || f.Page != 2 || f.Pages != 3 || f.Summary.Devices != 61 {
		t.Fatalf("API page 2 of the overdue: %d devices, total %d, page %d of %d, summary %d", len(f.Devices), f.Total, f.Page, f.Pages, f.Summary.Devices)
	}
	a = s.do(t, "GET", "/fleet?q=dev-&version=1.0", nil, c)
	for _, want := range []string{"61 devices", `<span id="matched">30 matching`, `name="q" value="dev-"`} {
		if a.status != 200 || !strings.Contains(a.body, want) || strings.Contains(a.body, `class="pages"`) {
			t.Errorf("search page lacks %q or pages one page:\n%.3000s", want, a.body)
		}
	}
	a = s.do(t, "GET", "/fleet?sort=name", nil, c)
	if !strings.Contains(a.body, "page 1 of 2") || !strings.Contains(a.body, `href="/fleet?page=2&amp;sort=name" rel="next"`) || strings.Contains(a.body, `rel="prev"`) {
		t.Errorf("page 1 of 2 lacks its links:\n%.3000s", a.body)
	}
	a = s.do(t, "GET", "/fleet?page=2&sort=name", nil, c)
	if !strings.Contains(a.body, "page 2 of 2") || !strings.Contains(a.body, `href="/fleet?sort=name" rel="prev"`) || strings.Contains(a.body, `rel="next"`) ||
		strings.Count(a.body, "<tr id=") != 11 {
		t.Errorf("page 2 of 2 lacks its links or its 11 rows:\n%.3000s", a.body)
	}
	for _, q := range []string{"state=sideways", "page=0", "per=9999", "sort=age", "page=two"} {
		for _, path := range []string{"/fleet?", "/fleet/rows?", "/fleet/api/devices?"} {
			if a := s.do(t, "GET", path+q, nil, c); a.status != http.StatusBadRequest || !strings.Contains(a.body, strings.SplitN(q, "=", 2)[0]) {
				t.Errorf("%s%s: %d %s, want 400 naming the parameter", path, q, a.status, a.body)
			}
		}
	}
}

// TestHuman: durations read as a person says them.
func TestHuman(t *testing.T) {
	for s, want := range map[int64]string{
		0: "0 s", 45: "45 s", 300: "5 min", 77 * 60: "77 min", 89*60 + 29: "89 min", 3*3600 + 12*60: "3 h 12 min",
		2 * 3600: "2 h", 47*3600 + 59*60 + 40: "2 d", 52 * 3600: "2 d 4 h", 72 * 3600: "3 d", -300: "-5 min",
	} {
		if got := human(s); got != want {
			t.Errorf("human(%d) = %q, want %q", s, got, want)
		}
	}
}

// TestFleetPageTimes: times are <time> elements in UTC (the text without
// script, and the title); an overdue row says when it was expected and
// how late; a halted row has its own class and word.
func TestFleetPageTimes(t *testing.T) {
	s := newSite(t, "")
	putFleet(t, s.fixture, 1)
	s.put(t, device{key: didtest.Key(t, 50), name: "stopped", mode: wake.Sleep, next: t0.Add(time.Hour), status: &wire.Status{Version: "1.0", Halted: true}})
	a := s.do(t, "GET", "/fleet", nil, s.login(t))
	for _, want := range []string{
		`as of <time datetime="2026-01-15T12:00:00Z" data-format="datetime" title="UTC 2026-01-15 12:00:00">2026-01-15 12:00 UTC</time>`,
		`<small class="why">expected <time datetime="2026-01-15T11:00:00Z" data-format="time" title="UTC 2026-01-15 11:00:00">11:00 UTC</time>, 60 min late</small>`,
		`class="row-overdue"`, `class="row-halted"`, `<span class="state halted">halted</span>`, "overdue after a grace of 5 min",
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	a = s.do(t, "GET", "/fleet/device/"+s.dev.DID().String(), nil, s.login(t))
	if !strings.Contains(a.body, `last state <time datetime="2026-01-15T11:00:00Z" data-format="seconds"`) {
		t.Errorf("the device page's times are not <time> elements:\n%.2000s", a.body)
	}
}
