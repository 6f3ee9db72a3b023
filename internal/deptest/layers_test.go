package deptest

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// checkLayers is CheckLayers over the fake graph of lines with Layers,
// without stale patterns (a fake graph holds a few packages of each row).
func checkLayers(lines []string) []Violation {
	var out []Violation
	for _, v := range CheckLayers(fake(lines...), Layers) {
		if v.Rule != RuleStalePattern {
			out = append(out, v)
		}
	}
	return out
}

// layerCases add one import or package to the clean graph; each must give
// exactly the violation want (its rule and path).
var layerCases = []struct {
	add      []string
	rule     string
	wantPath string
}{
	// A package in no row, under a new folder or under a placed one.
	{[]string{"newpkg: did"}, RuleOneRow, "newpkg"},
	{[]string{"internal/newleaf:"}, RuleOneRow, "internal/newleaf"},
	{[]string{"cmd/torpor-new: did"}, RuleOneRow, "cmd/torpor-new"},
	{[]string{"transport/link/linktest: transport/link"}, RuleOneRow, "transport/link/linktest"},
	// An import of a row above: a foundation, a protocol leaf, the
	// device's side (what the rule "MLS sessions and the device's link
	// client link nothing of the relay" said before the rows), the tools
	// and the commands reaching up.
	{[]string{"store: transport/mqtt"}, RuleImportsDown, "store transport/mqtt"},
	{[]string{"did: internal/atomicfile runtime/gate"}, RuleImportsDown, "did runtime/gate"},
	{[]string{"transport/link/wire: did store/queue"}, RuleImportsDown, "transport/link/wire store/queue"},
	{[]string{"session: mls transport/link/wire store transport/broker"}, RuleImportsDown, "session transport/broker"},
	{[]string{"transport/link: transport/link/wire transport/link/server"}, RuleImportsDown, "transport/link transport/link/server"},
	{append(slices.Clone(conformanceCommand), "conformance: runtime test/procs"), RuleImportsDown, "conformance test/procs"},
	{[]string{"cmd/torporctl: transport/mqtt/command session/sender transport/bearer test/procs"}, RuleImportsDown, "cmd/torporctl test/procs"},
}

// TestLayersCanFail: Layers places every package of the clean graph (and
// torpor-conformance), and each case breaks it as it says.
func TestLayersCanFail(t *testing.T) {
	for _, g := range [][]string{clean, slices.Concat(clean, conformanceCommand)} {
		if vs := checkLayers(g); len(vs) != 0 {
			t.Fatalf("the clean fake graph: %v", vs)
		}
	}
	for _, tt := range layerCases {
		vs := checkLayers(slices.Concat(clean, tt.add))
		if len(vs) != 1 || vs[0].Rule != tt.rule || strings.Join(rel(vs[0].Path), " ") != tt.wantPath {
			t.Errorf("adding %q: violations %v, want one of %q along %s", tt.add, vs, tt.rule, tt.wantPath)
		}
	}
	vs := checkLayers(append(slices.Clone(clean), "newpkg: did"))
	if want := "newpkg is in no row: place it"; len(vs) != 1 || !strings.Contains(vs[0].String(), want) {
		t.Errorf("a new package: %v, want a message with %q", vs, want)
	}
}

// TestLayerTableCanFail: a package two rows select, and a pattern of
// Packages that selects nothing, are violations; a Pending pattern that
// selects nothing is not, and one that selects a package places it.
func TestLayerTableCanFail(t *testing.T) {
	layers := []Layer{
		{Name: "low", Packages: []string{"a/...", "gone"}, Pending: []string{"soon", "leaving"}},
		{Name: "high", Packages: []string{"a/b", "c"}},
	}
	got := map[string]bool{}
	for _, v := range CheckLayers(fake("a:", "a/b: a", "c: a leaving", "leaving:"), layers) {
		got[v.String()] = true
	}
	want := map[string]bool{
		RuleOneRow + ": a/b is in 2 rows (1, low; 2, high): narrow their patterns":                                                                       true,
		RuleStalePattern + `: "gone" of row "low" selects no package: fix it, or move it to the row's Pending while its package is on its way in or out`: true,
	}
	if !maps.Equal(got, want) {
		t.Errorf("CheckLayers = %v, want %v", got, want)
	}
}

// TestArchitectureDocShowsLayers: docs/architecture.md shows Layers as
// LayerTable renders it, so the page and the check are one table.
func TestArchitectureDocShowsLayers(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := LayerTable(Layers); !strings.Contains(string(doc), want) {
		t.Errorf("docs/architecture.md does not show the layer table of internal/deptest's Layers; put this in its place:\n%s", want)
	}
}
