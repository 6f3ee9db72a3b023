package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// load returns the module's import graph, with every package the
// module's packages depend on, from `go list -deps -json`. GOPROXY=off
// keeps it hermetic: the modules are in the cache once the module builds.
func load(t *testing.T) Graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports", Module+"/...")
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	g := Graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		g[p.ImportPath] = p.Imports
	}
	return g
}

// TestModuleKeepsItsLayers checks Rules over the module's real graph.
func TestModuleKeepsItsLayers(t *testing.T) {
	g := load(t)
	for _, p := range []string{Module + "/cmd/torpor-agent", Module + "/transport/relay", "github.com/mochi-mqtt/server/v2"} {
		if _, ok := g[p]; !ok {
			t.Fatalf("the graph from go list lacks %s", p)
		}
	}
	for _, v := range Check(g, Rules) {
		t.Error(v)
	}
}

// fake builds a graph of module packages (relative paths, or absolute
// ones with a dot in their first element) from "pkg: imp imp" lines.
func fake(lines ...string) Graph {
	abs := func(p string) string {
		if std, ok := strings.CutPrefix(p, "std:"); ok {
			return std
		}
		if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
			return p
		}
		return Module + "/" + p
	}
	g := Graph{}
	for _, l := range lines {
		from, imps, _ := strings.Cut(l, ":")
		g[abs(strings.TrimSpace(from))] = nil
		for _, imp := range strings.Fields(imps) {
			g[abs(strings.TrimSpace(from))] = append(g[abs(strings.TrimSpace(from))], abs(imp))
			if _, ok := g[abs(imp)]; !ok {
				g[abs(imp)] = nil
			}
		}
	}
	return g
}

// clean is a graph in which every rule selects a package and none is
// broken.
var clean = []string{
	"cmd/torpor-agent: runtime transport/link",
	"cmd/torpor-relay: transport/relay transport/broker store/agents",
	"runtime: session transport/link store transport/mqtt",
	"transport/mqtt: github.com/eclipse/paho.golang/autopaho/queue",
	"transport/link: transport/link/wire",
	"transport/link/wire: did",
	"transport/relay: transport/link/server store/queue store/agents pulse github.com/prometheus/client_golang/prometheus",
	"transport/link/server: transport/link/wire store/queue",
	"transport/broker: github.com/mochi-mqtt/server/v2",
	"session: mls transport/link/wire store",
	"store/agents: store/queue wake",
	"store/queue: store",
	"governed: did clock",
	"pulse: did",
	"boards:",
	"wake: clock",
}

// TestEachRuleCanFail: the clean graph passes; one forbidden import added
// to it, directly or through another package, breaks exactly the rule
// that forbids it, with the import path that does it.
func TestEachRuleCanFail(t *testing.T) {
	if vs := Check(fake(clean...), Rules); len(vs) != 0 {
		t.Fatalf("the clean fake graph: %v", vs)
	}
	tests := []struct {
		add      []string
		rule     int
		wantPath string
	}{
		{[]string{"pulse: did internal/x", "internal/x: runtime/gate"}, 0, "pulse internal/x runtime/gate"},
		{[]string{"store/agents: store/queue wake session"}, 1, "store/agents session"},
		{[]string{"transport/broker: github.com/mochi-mqtt/server/v2 runtime/drain"}, 1, "transport/broker runtime/drain"},
		{[]string{"transport/link: transport/link/wire github.com/mochi-mqtt/server/v2"}, 2, "cmd/torpor-agent transport/link github.com/mochi-mqtt/server/v2"},
		{[]string{"transport/link/wire: did store/queue"}, 3, "transport/link/wire store/queue"},
		{[]string{"did: std:regexp"}, 4, "cmd/torpor-agent transport/link transport/link/wire did regexp"},
		{[]string{"transport/mqtt: github.com/eclipse/paho.golang/autopaho/queue github.com/eclipse/paho.golang/autopaho"},
			5, "cmd/torpor-agent runtime transport/mqtt github.com/eclipse/paho.golang/autopaho"},
		{[]string{"transport/link: transport/link/wire golang.org/x/net/proxy"}, 5, "cmd/torpor-agent transport/link golang.org/x/net/proxy"},
		{[]string{"transport/link: transport/link/wire std:net/http"}, 6, "cmd/torpor-agent transport/link net/http"},
		{[]string{"transport/link: transport/link/wire github.com/coder/websocket"}, 6, "cmd/torpor-agent transport/link github.com/coder/websocket"},
	}
	for _, tt := range tests {
		g := fake(append(slices.Clone(clean), tt.add...)...)
		var got []Violation
		for _, v := range Check(g, Rules) {
			if v.Rule == Rules[tt.rule].Name && strings.Join(rel(v.Path), " ") == tt.wantPath {
				got = append(got, v)
			}
		}
		if len(got) != 1 {
			t.Errorf("adding %q: violations %v, want one of rule %q along %s", tt.add, Check(g, Rules), Rules[tt.rule].Name, tt.wantPath)
		}
	}
	covered := map[int]bool{}
	for _, tt := range tests {
		covered[tt.rule] = true
	}
	for i, r := range Rules {
		if !covered[i] {
			t.Errorf("no fake violation of rule %q", r.Name)
		}
	}
}

// TestStaleRuleFails: a rule whose From selects no package is reported.
func TestStaleRuleFails(t *testing.T) {
	r := Rule{Name: "stale", From: []string{"nowhere/..."}, Forbid: []string{"runtime/..."}}
	vs := Check(fake(clean...), []Rule{r})
	if len(vs) != 1 || vs[0].Rule != "stale" || vs[0].Path != nil {
		t.Errorf("Check with a stale rule = %v, want one violation without a path", vs)
	}
}

// TestMatch pins the pattern forms.
func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		pat, pkg string
		want     bool
	}{
		{"runtime/...", Module + "/runtime", true},
		{"runtime/...", Module + "/runtime/drain", true},
		{"runtime/...", "runtime", false},
		{"runtime/...", Module + "/runtimex", false},
		{"transport/link", Module + "/transport/link/wire", false},
		{"transport/link", Module + "/transport/link", true},
		{"github.com/mochi-mqtt/...", "github.com/mochi-mqtt/server/v2", true},
		{"std:regexp/...", "regexp", true},
		{"std:regexp/...", "regexp/syntax", true},
		{"std:regexp", "regexp/syntax", false},
		{"std:regexp", Module + "/regexp", false},
		{"regexp", "regexp", false},
	} {
		if got := match(tt.pat, tt.pkg); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pat, tt.pkg, got, tt.want)
		}
	}
}

// rel strips Module from the module's paths.
func rel(path []string) []string {
	out := make([]string, len(path))
	for i, p := range path {
		out[i] = strings.TrimPrefix(p, Module+"/")
	}
	return out
}
