package operatorapi

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Page sizes of the fleet: a page has DefaultPer rows unless the query
// asks for another number, at most MaxPer.
const (
	DefaultPer = 50
	MaxPer     = 500
	// maxText bounds the text parameters (q, version, tag, tenant).
	maxText = 256
)

// Sorts are the orders of the table: most urgent state first (the
// default), or by name.
const (
	SortState = "state"
	SortName  = "name"
)

// Query selects and pages the fleet: the query parameters of /fleet and
// /fleet/api/devices (q, state, version, tag, tenant, sort, page, per). The
// summary always counts the whole fleet; Fleet.Total counts the devices
// the query matches.
type Query struct {
	// Q is a case-insensitive substring of the device's name or DID.
	Q string
	// State is one of States.
	State string
	// Version is the build the device's signed status names, exactly.
	Version string
	// Tag is one of the tags of the skills in the device's Agent Card,
	// exactly (Device.Tags).
	Tag string
	// Tenant is a tenant's owner DID: only that tenant's devices (of
	// those the operator may see; docs/tenants.md). Match does not check
	// it: the relay knows the tenants (console.Source.TenantDevices).
	Tenant string
	// Sort is SortState or SortName; empty means SortState.
	Sort string
	// Page counts from 1; zero means 1.
	Page int
	// Per is the page's size, at most MaxPer; zero means every matching
	// device on one page.
	Per int
}

// ParseQuery reads a Query from URL query parameters, refusing a state or
// sort it does not know, a page or per that is not a number in range and
// text longer than 256 bytes. Per stays zero when v has neither page nor
// per.
func ParseQuery(v url.Values) (Query, error) {
	q := Query{Q: v.Get("q"), State: v.Get("state"), Version: v.Get("version"), Tag: v.Get("tag"), Tenant: v.Get("tenant"), Sort: v.Get("sort")}
	for name, s := range map[string]string{"q": q.Q, "version": q.Version, "tag": q.Tag, "tenant": q.Tenant} {
		if len(s) > maxText {
			return Query{}, fmt.Errorf("%s is longer than %d bytes", name, maxText)
		}
	}
	if q.State != "" && !slices.Contains(States, q.State) {
		return Query{}, fmt.Errorf("unknown state %q: want one of %s", q.State, strings.Join(States, ", "))
	}
	if q.Sort != "" && q.Sort != SortState && q.Sort != SortName {
		return Query{}, fmt.Errorf("unknown sort %q: want %s or %s", q.Sort, SortState, SortName)
	}
	var err error
	if q.Page, err = number(v, "page", 1, 1<<30); err != nil {
		return Query{}, err
	}
	if q.Per, err = number(v, "per", 1, MaxPer); err != nil {
		return Query{}, err
	}
	if q.Per == 0 && q.Page != 0 {
		q.Per = DefaultPer
	}
	return q, nil
}

// number reads the integer parameter name, between lo and hi; zero when
// it is absent.
func number(v url.Values, name string, lo, hi int) (int, error) {
	s := v.Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s %q: want a whole number from %d to %d", name, s, lo, hi)
	}
	return n, nil
}

// Values is q as query parameters, leaving out what is empty or zero.
func (q Query) Values() url.Values {
	v := url.Values{}
	for name, s := range map[string]string{"q": q.Q, "state": q.State, "version": q.Version, "tag": q.Tag, "tenant": q.Tenant, "sort": q.Sort} {
		if s != "" {
			v.Set(name, s)
		}
	}
	if q.Page > 0 {
		v.Set("page", strconv.Itoa(q.Page))
	}
	if q.Per > 0 {
		v.Set("per", strconv.Itoa(q.Per))
	}
	return v
}

// Match reports whether d is one of the devices q selects (all its
// conditions hold but Tenant's; paging aside).
func (q Query) Match(d Device) bool {
	switch {
	case q.State != "" && d.State != q.State,
		q.Version != "" && d.Version != q.Version,
		q.Tag != "" && !slices.Contains(d.Tags, q.Tag):
		return false
	case q.Q == "":
		return true
	}
	return containsFold(d.Name, q.Q) || containsFold(d.DID, q.Q)
}

// containsFold reports whether sub is within s, ignoring case.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
