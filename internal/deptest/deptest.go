// Package deptest holds the module's import layering as data, Rules, and
// Check, which checks rules over an import graph; its test loads the
// module's real graph with `go list -deps -json` and fails on any
// violation. It also holds LongFuncs, the function-length rule
// (MaxFuncLines), which its test applies to every Go file of the module.
//
// The layers (docs/architecture.md, "Packages"): the agent's runtime
// (runtime/...) is on top and only the agent and tools import it; the
// protocol packages (did, governed, pulse, mls, session, the link's wire
// format), the stores and the transports are below it; the relay
// (transport/relay, its side of the link, the embedded broker) is beside
// the runtime, and neither links the other.
//
// Only non-test imports count: a package's tests may drive it against
// the real runtime or relay (session/sender's tests run an agent and a
// relay), and test code never ends up in a binary. Imports are followed
// transitively, so a rule cannot be broken through a package it does not
// name. The graph is the host platform's (go list without GOOS/GOARCH);
// the files that differ between platforms (wake's Linux ioctls, boards)
// import nothing of the module that the others do not.
package deptest

import (
	"fmt"
	"sort"
	"strings"
)

// Module is the module path; rule patterns without a dot in their first
// element are relative to it, except those starting with "std:", which name
// standard library packages.
const Module = "github.com/torpor-dev/torpor"

// Graph maps an import path to the import paths its non-test files import.
type Graph map[string][]string

// Rule forbids the packages From selects to depend, directly or through
// other packages, on any package Forbid selects. A pattern is an import
// path, or a path followed by "/..." for it and every package under it.
type Rule struct {
	Name   string
	From   []string
	Forbid []string
}

// Violation is a forbidden dependency: Path runs from the constrained
// package to the forbidden one, each element importing the next.
type Violation struct {
	Rule string
	Path []string
}

func (v Violation) String() string {
	if len(v.Path) == 0 {
		return v.Rule + ": selects no package (a pattern is stale)"
	}
	path := make([]string, len(v.Path))
	for i, p := range v.Path {
		path[i] = strings.TrimPrefix(p, Module+"/")
	}
	return fmt.Sprintf("%s: %s depends on %s (%s)", v.Rule, path[0], path[len(path)-1], strings.Join(path, " → "))
}

// Rules are the module's layering rules.
var Rules = []Rule{
	{
		Name: "the lower layers do not depend on the agent's runtime",
		From: []string{"transport/...", "session/...", "store/...", "mls/...", "governed/...", "did/...",
			"clock/...", "wake/...", "boards/...", "pulse/..."},
		Forbid: []string{"runtime/..."},
	},
	{
		Name:   "the relay links neither the agent's runtime nor its MLS sessions",
		From:   []string{"transport/relay/...", "transport/link/server/...", "transport/broker/...", "store/agents/...", "store/queue/...", "store/jsstore/..."},
		Forbid: []string{"runtime/...", "session/...", "mls/..."},
	},
	{
		Name: "torpor-agent links nothing of the relay",
		From: []string{"cmd/torpor-agent"},
		Forbid: []string{"transport/relay/...", "transport/broker/...", "transport/link/server/...",
			"store/queue/...", "store/agents/...", "store/jsstore/...", "github.com/mochi-mqtt/...", "github.com/prometheus/...",
			"github.com/nats-io/..."},
	},
	{
		Name: "MLS sessions and the device's link client link nothing of the relay",
		From: []string{"session/...", "transport/link", "transport/link/wire"},
		Forbid: []string{"transport/relay/...", "transport/broker/...", "transport/link/server/...",
			"store/queue/...", "store/agents/..."},
	},
	{
		// docs/footprint.md: what the agent stopped linking to get smaller.
		// regexp came with github.com/gowebpki/jcs (internal/jcs, written
		// from RFC 8785, does without it).
		Name:   "torpor-agent links neither regexp nor the upstream JCS module",
		From:   []string{"cmd/torpor-agent"},
		Forbid: []string{"std:regexp/...", "github.com/gowebpki/jcs/..."},
	},
	{
		// docs/footprint.md: autopaho's connection path links a WebSocket
		// client and an all_proxy dialer the agent never uses; it keeps its
		// MQTT connection with transport/mqtt/mqttconn. autopaho/queue, the
		// interface store/mqttsession implements, imports neither.
		Name: "torpor-agent links neither autopaho nor its WebSocket and proxy dialers",
		From: []string{"cmd/torpor-agent"},
		Forbid: []string{"github.com/eclipse/paho.golang/autopaho", "github.com/eclipse/paho.golang/autopaho/extensions/...",
			"github.com/gorilla/websocket/...", "golang.org/x/net/proxy/..."},
	},
	agentWithoutNetHTTP, // on since autopaho left the agent (the rule above)
}

// agentWithoutNetHTTP keeps net/http out of torpor-agent (docs/footprint.md:
// with its textproto, MIME and idna code it was the agent's largest
// dependency after the runtime and crypto). The link dials with
// transport/link/internal/wsclient, the Unix-socket delivery posts with
// internal/http1, and bearer's HTTP middleware is package bearerhttp. It
// holds only without autopaho, which imports net/http: drop its line from
// Rules to turn it off.
var agentWithoutNetHTTP = Rule{
	Name:   "torpor-agent links neither net/http nor a WebSocket module",
	From:   []string{"cmd/torpor-agent"},
	Forbid: []string{"std:net/http/...", "github.com/coder/websocket/...", "github.com/gorilla/websocket/..."},
}

// Check returns the violations of rules in g, sorted: for each rule, each
// package it selects and each forbidden package reached from it, one
// violation with the shortest import path; and a violation with no Path
// for a rule whose From selects no package of g, so that a renamed
// package cannot empty a rule silently.
func Check(g Graph, rules []Rule) []Violation {
	var out []Violation
	pkgs := make([]string, 0, len(g))
	for p := range g {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, r := range rules {
		selected := false
		for _, p := range pkgs {
			if !matchAny(r.From, p) {
				continue
			}
			selected = true
			for _, path := range reach(g, p) {
				if matchAny(r.Forbid, path[len(path)-1]) {
					out = append(out, Violation{Rule: r.Name, Path: path})
				}
			}
		}
		if !selected {
			out = append(out, Violation{Rule: r.Name})
		}
	}
	return out
}

// reach returns, for every package from depends on, the shortest import
// path to it (breadth first; imports in the order g lists them).
func reach(g Graph, from string) [][]string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	var out [][]string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range g[p] {
			if _, seen := prev[q]; seen {
				continue
			}
			prev[q] = p
			queue = append(queue, q)
			path := []string{q}
			for at := p; at != ""; at = prev[at] {
				path = append([]string{at}, path...)
			}
			out = append(out, path)
		}
	}
	return out
}

// matchAny reports whether pkg matches one of patterns.
func matchAny(patterns []string, pkg string) bool {
	for _, pat := range patterns {
		if match(pat, pkg) {
			return true
		}
	}
	return false
}

// match reports whether pkg matches pat: pat's path (made absolute under
// Module when its first element has no dot, or taken as a standard library
// path when it starts with "std:") exactly, or, when pat ends in "/...",
// any package under it.
func match(pat, pkg string) bool {
	tree := strings.HasSuffix(pat, "/...")
	pat = strings.TrimSuffix(pat, "/...")
	if std, ok := strings.CutPrefix(pat, "std:"); ok {
		pat = std
	} else if first, _, _ := strings.Cut(pat, "/"); !strings.Contains(first, ".") {
		pat = Module + "/" + pat
	}
	return pkg == pat || (tree && strings.HasPrefix(pkg, pat+"/"))
}
