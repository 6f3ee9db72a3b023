package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// load returns the module's import graph, with every package the
// module's packages depend on, from `go list -deps -json`, with the
// integration tag so that a package of integration tests only is in it.
// GOPROXY=off keeps it hermetic: the modules are in the cache once the
// module builds.
func load(t *testing.T) Graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", "integration", "-json=ImportPath,Imports", Module+"/...")
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

// TestModuleKeepsItsLayers checks Layers and Rules over the module's real
// graph.
func TestModuleKeepsItsLayers(t *testing.T) {
	g := load(t)
	for _, p := range []string{Module + "/cmd/torpor-agent", Module + "/transport/relay", Module + "/test/qemu",
		"github.com/mochi-mqtt/server/v2"} {
		if _, ok := g[p]; !ok {
			t.Fatalf("the graph from go list lacks %s", p)
		}
	}
	t.Run("layers", func(t *testing.T) {
		for _, v := range CheckLayers(g, Layers) {
			t.Error(v)
		}
	})
	t.Run("command rules", func(t *testing.T) {
		for _, v := range CheckCommandRules(g, Rules) {
			t.Error(v)
		}
	})
	for _, r := range Rules {
		t.Run(r.Name, func(t *testing.T) {
			for _, v := range Check(g, []Rule{r}) {
				t.Error(v)
			}
		})
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

// clean is a graph that every layer of Layers places (apart from stale
// patterns: it holds a few packages of each row only) and in which every
// rule selects a package and none is broken.
var clean = []string{
	"cmd/torpor-agent: runtime runtime/manage transport/link",
	"cmd/torpor-relay: transport/relay transport/broker store/agents session/kpcheck",
	"cmd/torporctl: transport/mqtt/command session/sender transport/bearer",
	"cmd/torpor-demo: test/procs session/sender store/jsstore/jsserver",
	"cmd/torpor-conformance: conformance",
	"conformance: runtime transport/relay store/jsstore/jsserver clock/clocktest",
	"test/procs: runtime/deliver",
	"runtime: session transport/link store transport/mqtt runtime/deliver",
	"runtime/manage: runtime transport/mqtt/command",
	"runtime/deliver: transport/mqtt/mqttconn",
	"transport/mqtt/command: transport/mqtt/envelope did",
	"transport/mqtt: github.com/eclipse/paho.golang/autopaho/queue transport/mqtt/mqttconn",
	"transport/mqtt/mqttconn: clock",
	"transport/mqtt/envelope: did",
	"transport/link: transport/link/wire",
	"transport/link/wire: did",
	"transport/bearer: did",
	"transport/relay: transport/link/server store/queue store/agents pulse github.com/prometheus/client_golang/prometheus",
	"transport/link/server: transport/link/wire store/queue",
	"transport/broker: github.com/mochi-mqtt/server/v2",
	"session: mls transport/link/wire store",
	"session/sender: session transport/bearer",
	"session/kpcheck: session",
	"store/agents: store/queue wake",
	"store/queue: store",
	"store/jsstore/jsserver: github.com/nats-io/nats-server/v2/server",
	"governed: did clock",
	"pulse: did",
	"did: internal/atomicfile",
	"boards:",
	"wake: clock",
}

// conformanceCommand is torpor-conformance's part of clean, for the cases
// that break it.
var conformanceCommand = []string{
	"cmd/torpor-conformance: conformance",
	"conformance: runtime transport/relay store/jsstore/jsserver clock/clocktest",
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
