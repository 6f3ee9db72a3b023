package envelope

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// vectorFile is the shared scope-algebra vectors (testdata/vectors/README.md).
const vectorFile = "../../testdata/vectors/envelope/attenuation.json"

type vectorCase struct {
	Name   string          `json:"name"`
	Kind   string          `json:"kind"`
	Parent json.RawMessage `json:"parent"`
	Child  json.RawMessage `json:"child"`
	Expect bool            `json:"expect"`
}

// TestAttenuationVectors runs every case of the shared vectors and checks
// that the file's registry is RegistryV0.
func TestAttenuationVectors(t *testing.T) {
	b, err := os.ReadFile(vectorFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Registry Registry     `json:"registry_v0"`
		Cases    []vectorCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Registry, RegistryV0()) {
		t.Errorf("registry_v0 = %v, RegistryV0() = %v", f.Registry, RegistryV0())
	}
	if len(f.Cases) < 12 {
		t.Fatalf("read %d cases, want at least 12", len(f.Cases))
	}
	for _, c := range f.Cases {
		got, err := f.Registry.CoversJSON(c.Kind, c.Parent, c.Child)
		if err != nil || got != c.Expect {
			t.Errorf("%s (%s): covered=%v err=%v, want %v", c.Name, c.Kind, got, err, c.Expect)
		}
	}
}

func TestUnknownVersionRefused(t *testing.T) {
	_, err := ParseScope([]byte(`{"v":"lap-scope-v1","act":"data:read","res":"mcp://t/x"}`))
	if !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("err = %v, want ErrUnknownVersion", err)
	}
	_, err = RegistryV0().CoversJSON("scope", []byte(`{"v":"lap-scope-v0","act":"data:read","res":"mcp://t/**","depth":2}`),
		[]byte(`{"v":"x","act":"data:read","res":"mcp://t/x"}`))
	if !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("child err = %v, want ErrUnknownVersion", err)
	}
}

func TestStrictParsing(t *testing.T) {
	for name, in := range map[string]string{
		"duplicate member": `{"v":"lap-scope-v0","act":"data:read","act":"data:write","res":"mcp://t/x"}`,
		"unknown member":   `{"v":"lap-scope-v0","act":"data:read","res":"mcp://t/x","extra":1}`,
		"bad window":       `{"v":"lap-scope-v0","act":"data:read","res":"mcp://t/x","cap":{"max_per_tx":1,"max_cumulative":1,"unit":"USD","window":"week"}}`,
		"negative depth":   `{"v":"lap-scope-v0","act":"data:read","res":"mcp://t/x","depth":-1}`,
	} {
		if _, err := ParseScope([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestResources(t *testing.T) {
	cases := []struct {
		parent, child string
		want          bool
	}{
		{"mcp://t/a/*", "mcp://t/a/b", true},
		{"mcp://t/a/*", "mcp://t/a/b/c", false},
		{"mcp://t/a/*", "mcp://t/a/**", false},
		{"mcp://t/a/**", "mcp://t/a/*", true},
		{"mcp://t/a/**", "mcp://t/a", false},
		{"MCP://T/a/**", "mcp://t/a/b", true},
		{"mcp://t/A/**", "mcp://t/a/b", false},
		{"mcp://t/a/**", "mcp://t/a/../b", false},
		{"mcp://t/a/**", "mcp://t/a/x%2Fy", false},
		{"mcp://t/a/**", "mcp://t/a/./b", false},
		{"mcp://t/*/b", "mcp://t/a/b", false},
		{"mcp://t/a", "mcp://t/a", true},
		{"mcp://t/a/**", "mcp://u/a/b", false},
	}
	for _, c := range cases {
		if got := CoversRes(c.parent, c.child); got != c.want {
			t.Errorf("CoversRes(%q, %q) = %v, want %v", c.parent, c.child, got, c.want)
		}
	}
}

func TestCapsAndCounterparties(t *testing.T) {
	day := Cap{MaxPerTx: 50, MaxCumulative: 2400, Unit: "USD", Window: WindowUTCDay}
	for _, c := range []struct {
		child Cap
		want  bool
	}{
		{Cap{50, 2400, "USD", WindowUTCDay}, true},
		{Cap{51, 100, "USD", WindowUTCDay}, false},
		{Cap{50, 100, "USD", WindowEpochTotal}, false},
		{Cap{50, 100, "USD", WindowUTCHour}, true},
		{Cap{50, 101, "USD", WindowUTCHour}, false},
	} {
		if got := CoversCap(day, c.child); got != c.want {
			t.Errorf("CoversCap(day, %+v) = %v, want %v", c.child, got, c.want)
		}
	}
	p := &Counterparties{Deny: []string{"did:web:evil"}}
	if CoversCP(p, &Counterparties{}) {
		t.Error("a child allowing everyone covered by a parent denying one")
	}
	if !CoversCP(p, &Counterparties{Deny: []string{"did:web:evil", "did:web:x"}}) {
		t.Error("a child denying more not covered")
	}
	if CoversCP(p, &Counterparties{Allow: []string{"did:web:evil"}}) {
		t.Error("a child allowing a denied counterparty covered")
	}
	if CoversCP(&Counterparties{Allow: []string{"did:web:a"}}, nil) {
		t.Error("a child with no set covered by an allow list")
	}
}

func TestEnvelopeConservesBudget(t *testing.T) {
	d := 2
	scope := func(cum int64, w string) Scope {
		return Scope{V: Version, Act: "finance:pay", Res: "ap2://rails/stripe/**", Depth: &d,
			Cap: &Cap{MaxPerTx: 10, MaxCumulative: cum, Unit: "USD", Window: w}}
	}
	d3 := 3
	parent := scope(2400, WindowUTCDay)
	parent.Depth = &d3
	r := RegistryV0()
	if err := r.CoversEnvelope([]Scope{parent}, []Scope{scope(1200, WindowUTCDay), scope(1200, WindowUTCDay)}); err != nil {
		t.Errorf("two halves: %v", err)
	}
	err := r.CoversEnvelope([]Scope{parent}, []Scope{scope(1200, WindowUTCDay), scope(1201, WindowUTCDay)})
	if !errors.Is(err, ErrWidened) {
		t.Errorf("over budget: err = %v, want ErrWidened", err)
	}
	err = r.CoversEnvelope([]Scope{parent}, []Scope{scope(100, WindowUTCHour), scope(1, WindowUTCDay)})
	if !errors.Is(err, ErrWidened) {
		t.Errorf("hour share plus a day scope over budget: err = %v, want ErrWidened", err)
	}
}

// TestCoversRules has one case per rule Covers applies, each refused for
// that rule alone and named in the error.
func TestCoversRules(t *testing.T) {
	d2, d1 := 2, 1
	var decay int64 = 60
	parent := Scope{V: Version, Act: "data:read", Res: "mcp://t/d/**", Depth: &d2, DecayMaxSec: &decay,
		Cap: &Cap{MaxPerTx: 5, MaxCumulative: 10, Unit: "B", Window: WindowEpochTotal},
		CP:  &Counterparties{Allow: []string{"did:web:a"}}}
	ok := parent
	ok.Depth = &d1
	cases := []struct {
		name string
		edit func(s *Scope)
		want string
	}{
		{"covered", func(*Scope) {}, ""},
		{"action", func(s *Scope) { s.Act = "data:write" }, "action"},
		{"unknown verb", func(s *Scope) { s.Act = "data:read:private" }, "action"},
		{"resource", func(s *Scope) { s.Res = "mcp://t/e/x" }, "resource"},
		{"no cap", func(s *Scope) { s.Cap = nil }, "cap"},
		{"repeating under a total", func(s *Scope) { c := *s.Cap; c.Window = WindowUTCDay; s.Cap = &c }, "cap"},
		{"counterparties", func(s *Scope) { s.CP = nil }, "counterparties"},
		{"decay absent", func(s *Scope) { s.DecayMaxSec = nil }, "decay"},
		{"depth absent is 0", func(s *Scope) { s.Depth = nil }, ""},
		{"depth kept", func(s *Scope) { s.Depth = &d2 }, "depth"},
		{"malformed resource", func(s *Scope) { s.Res = "mcp://t/**/x" }, "malformed"},
	}
	for _, c := range cases {
		child := ok
		c.edit(&child)
		err := RegistryV0().Covers(parent, child)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	tx := Cap{MaxPerTx: 5, MaxCumulative: 5, Unit: "B", Window: WindowTx}
	if !CoversCap(tx, Cap{MaxPerTx: 5, MaxCumulative: 1000, Unit: "B", Window: WindowUTCDay}) {
		t.Error("a tx parent bounds only single transactions; a windowed child narrows it")
	}
	if CoversCap(Cap{MaxPerTx: 5, MaxCumulative: 100, Unit: "B", Window: WindowUTCHour}, Cap{MaxPerTx: 5, MaxCumulative: 1, Unit: "B", Window: WindowUTCDay}) {
		t.Error("a day child of an hour parent covered")
	}
	total := parent
	if err := RegistryV0().CoversEnvelope([]Scope{total}, []Scope{ok, ok}); !errors.Is(err, ErrWidened) {
		t.Errorf("two children each with the whole total: err = %v", err)
	}
	if _, err := ParseEnvelope([]byte(`[]`)); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty envelope: err = %v", err)
	}
}
