package operatorapi

import (
	"net/url"
	"strings"
	"testing"
)

// TestParseQuery: the parameters are read, a page without a size gets
// DefaultPer, neither leaves Per zero (every device), and a bad state,
// sort, page, per or overlong text is refused saying which.
func TestParseQuery(t *testing.T) {
	v, _ := url.ParseQuery("q=Pump&state=overdue&version=1.2&tag=site-3&tenant=did:key:z6MkOwner&sort=name&page=3")
	q, err := ParseQuery(v)
	want := Query{Q: "Pump", State: StateOverdue, Version: "1.2", Tag: "site-3", Tenant: "did:key:z6MkOwner", Sort: SortName, Page: 3, Per: DefaultPer}
	if err != nil || q != want {
		t.Fatalf("ParseQuery = %+v, %v; want %+v", q, err, want)
	}
	if back, _ := ParseQuery(q.Values()); back != q {
		t.Errorf("Values does not round-trip: %+v", back)
	}
	if q, err := ParseQuery(url.Values{}); err != nil || q != (Query{}) {
		t.Errorf("no parameters: %+v, %v; want the zero Query (every device)", q, err)
	}
	for raw, word := range map[string]string{
		"state=sideways": "state", "sort=age": "sort", "page=0": "page", "page=x": "page", "per=501": "per",
		"per=0": "per", "per=-5": "per", "q=" + strings.Repeat("a", 257): "q", "tag=" + strings.Repeat("a", 257): "tag",
		"tenant=" + strings.Repeat("a", 257): "tenant",
	} {
		v, _ := url.ParseQuery(raw)
		if _, err := ParseQuery(v); err == nil || !strings.HasPrefix(err.Error(), word) && !strings.Contains(err.Error(), word) {
			t.Errorf("%.20s: %v, want an error naming %s", raw, err, word)
		}
	}
}

// TestQueryMatch: q is a substring of the name or DID in any case; state,
// version and tag must be equal.
func TestQueryMatch(t *testing.T) {
	d := Device{Name: "North-Gate", DID: "did:key:z6MkAbc", State: StateAsleep, Version: "1.2", Tags: []string{"site-3", "water"}}
	for _, tt := range []struct {
		q    Query
		want bool
	}{
		{Query{}, true},
		{Query{Q: "north"}, true},
		{Query{Q: "6mKab"}, true},
		{Query{Q: "south"}, false},
		{Query{State: StateAsleep, Version: "1.2", Tag: "water"}, true},
		{Query{State: StateOverdue}, false},
		{Query{Version: "1.20"}, false},
		{Query{Tag: "site"}, false},
	} {
		if got := tt.q.Match(d); got != tt.want {
			t.Errorf("%+v.Match = %v, want %v", tt.q, got, tt.want)
		}
	}
}
