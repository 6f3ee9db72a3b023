package deptest

import (
	"fmt"
	"slices"
	"strings"
)

// Layer is one row of the layer table: the packages Packages and Pending
// select. A pattern of Packages must select a package of the module; one
// of Pending may select none: it names a package on its way into the
// module or out of it (being added, or moved elsewhere), so that the table
// need not change the day it lands.
type Layer struct {
	Name     string
	Packages []string
	Pending  []string
}

// Layers is the layer table of docs/architecture.md, bottom row first.
// Every package of the module is in exactly one row, and its non-test files
// import packages of the module only from its own row or a row below it
// (imports from outside the module are Rules' business). A *test helper
// sits in the row its imports put it in, next to the package it helps
// (transport/mqtt/mqtttest starts the relay's broker, so it sits in the
// relay's row); the integration tests and their tools (test/...) and the
// demo, which drives the binaries as they ship, are the top row.
var Layers = []Layer{
	{
		Name: "foundations",
		Packages: []string{"clock/...", "wake/...", "boards/...", "store", "store/storetest", "store/replay",
			"store/ledger", "store/mqttsession", "internal/atomicfile", "internal/canon", "internal/jcs",
			"internal/jsonpos", "internal/http1", "internal/origin", "internal/version", "internal/deptest",
			"internal/pkgdoc", "internal/strictjson", "internal/benchcpu", "internal/safetext", "internal/tufsign", "internal/tufcustom", "internal/diskspace", "internal/syncbuf",
			"internal/nettest", "internal/httpjson"},
	},
	{
		Name: "protocol leaves",
		Packages: []string{"did/...", "governed/...", "pulse", "mls/...", "transport/a2a", "transport/bearer/...",
			"transport/link/wire", "transport/mqtt/envelope", "transport/mqtt/cborjson", "transport/mqtt/login",
			"transport/a2a/queuebounds", "transport/a2a/a2arelay", "transport/tenancy"},
	},
	{
		Name: "device transports, sessions",
		Packages: []string{"session/...", "transport/link", "transport/link/internal/...", "transport/mqtt", "transport/mqtt/mqttconn",
			"transport/mqtt/command", "transport/mqtt/mosquitto", "transport/operatorapi"},
	},
	{
		// store/queue/... holds the record log's engine (store/queue/recordlog)
		// and the group committer (store/queue/internal/groupcommit) as they
		// arrive.
		Name: "the agent's runtime; the relay",
		Packages: []string{"runtime/...", "runtime/update/tuf", "transport/relay/...", "transport/link/server/...", "transport/broker/...",
			"store/queue/...", "store/agents/...", "store/audit/...", "store/shared/...", "store/rollouts/...", "store/jsstore/...", "store/relaystore", "store/tenants/...",
			"store/updaterepo", "transport/mqtt/mqtttest"},
	},
	{
		Name:     "tools on both sides",
		Packages: []string{"conformance/..."},
	},
	{
		Name:     "commands",
		Packages: []string{"cmd/torpor-agent", "cmd/torpor-relay", "cmd/torporctl", "cmd/torpor-conformance"},
	},
	{
		Name:     "the demo, the integration tests and their tools",
		Packages: []string{"cmd/torpor-demo", "test/..."},
	},
}

// The names of CheckLayers's violations.
const (
	RuleOneRow       = "every package of the module is in exactly one row of Layers"
	RuleImportsDown  = "a package imports only from its own row and the rows below it"
	RuleStalePattern = "every pattern of a row's Packages selects a package"
)

// CheckLayers returns the violations of layers in g's module packages:
// a package in no row or in more than one, an import of a package in a
// row above the importer's, and a pattern of a row's Packages that selects
// no package.
func CheckLayers(g Graph, layers []Layer) []Violation {
	var out []Violation
	row := map[string]int{}
	used := map[string]bool{}
	for _, p := range g.sorted() {
		if !inModule(p) {
			continue
		}
		rows := rowsOf(layers, p, used)
		switch {
		case len(rows) == 0:
			out = append(out, Violation{Rule: RuleOneRow, Path: []string{p}, Msg: fmt.Sprintf(
				"%s is in no row: place it in the row of internal/deptest's Layers whose packages it may import and be imported by (and in docs/architecture.md's layer table)", rel1(p))})
		case len(rows) > 1:
			out = append(out, Violation{Rule: RuleOneRow, Path: []string{p}, Msg: fmt.Sprintf(
				"%s is in %d rows (%s): narrow their patterns", rel1(p), len(rows), rowNames(layers, rows))})
		default:
			row[p] = rows[0]
		}
	}
	out = append(out, upwardImports(g, layers, row)...)
	for _, l := range layers {
		for _, pat := range l.Packages {
			if !used[pat] {
				out = append(out, Violation{Rule: RuleStalePattern, Msg: fmt.Sprintf(
					"%q of row %q selects no package: fix it, or move it to the row's Pending while its package is on its way in or out", pat, l.Name)})
			}
		}
	}
	return out
}

// rowsOf returns the rows one of whose patterns selects pkg, and marks in
// used the patterns of Packages that do.
func rowsOf(layers []Layer, pkg string, used map[string]bool) []int {
	var rows []int
	for i, l := range layers {
		in := false
		for _, pat := range l.Packages {
			if match(pat, pkg) {
				used[pat], in = true, true
			}
		}
		if in || matchAny(l.Pending, pkg) {
			rows = append(rows, i)
		}
	}
	return rows
}

// upwardImports returns a violation for every import, by a package placed
// in row, of a package placed in a higher row.
func upwardImports(g Graph, layers []Layer, row map[string]int) []Violation {
	var out []Violation
	for _, p := range g.sorted() {
		from, ok := row[p]
		if !ok {
			continue
		}
		for _, q := range g[p] {
			if to, ok := row[q]; ok && to > from {
				out = append(out, Violation{Rule: RuleImportsDown, Path: []string{p, q}, Msg: fmt.Sprintf(
					"%s (row %d, %s) imports %s (row %d, %s), a row above it", rel1(p), from+1, layers[from].Name, rel1(q), to+1, layers[to].Name)})
			}
		}
	}
	return out
}

func rowNames(layers []Layer, rows []int) string {
	var names []string
	for _, r := range rows {
		names = append(names, fmt.Sprintf("%d, %s", r+1, layers[r].Name))
	}
	return strings.Join(names, "; ")
}

func rel1(p string) string { return rel([]string{p})[0] }

// LayerTable renders layers as the Markdown table docs/architecture.md
// shows, top row first; a Pending pattern is marked "(pending)".
func LayerTable(layers []Layer) string {
	var b strings.Builder
	b.WriteString("| row | packages |\n|---|---|\n")
	for i, l := range slices.Backward(layers) {
		var pats []string
		for _, p := range l.Packages {
			pats = append(pats, "`"+p+"`")
		}
		for _, p := range l.Pending {
			pats = append(pats, "`"+p+"` (pending)")
		}
		fmt.Fprintf(&b, "| %d. %s | %s |\n", i+1, l.Name, strings.Join(pats, ", "))
	}
	return b.String()
}
