// Package deptest holds the module's import layering as data and the
// checks that apply it to an import graph; its test loads the module's real
// graph with `go list -deps -json` and fails on any violation. It also holds
// LongFuncs, the function-length rule (MaxFuncLines), which its test
// applies to every Go file of the module.
//
// The layering has two parts (docs/architecture.md, "The package graph"):
//
//   - Layers, the layer table: ordered rows, foundations first, then the
//     commands, and the demo with the integration tests last. Every package of the module is in
//     exactly one row, and its non-test files import packages of the module
//     only from its own row or the rows below it (CheckLayers). A package in
//     no row fails the check until it is placed.
//   - Rules, what a set of packages must not link, directly or through
//     other packages, including packages outside the module: the layering
//     rules the rows cannot say (the agent's runtime and the relay share a
//     row and never link each other) and one or more rules per command
//     (Check). Every command has a rule of its own (CheckCommandRules).
//
// Only non-test imports count: a package's tests may drive it against
// the real runtime or relay (session/sender's tests run an agent and a
// relay), and test code never ends up in a binary. Rules follow imports
// transitively, so a rule cannot be broken through a package it does not
// name; a row's imports need checking only one step deep, since a path of
// steps that never go up never ends above where it began. The graph is the
// host platform's (go list without GOOS/GOARCH, with the integration tag so
// that test/ packages holding only integration tests are placed too); the
// files that differ between platforms (wake's Linux ioctls, boards) import
// nothing of the module that the others do not.
package deptest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Module is the module path; patterns without a dot in their first
// element are relative to it, except those starting with "std:", which name
// standard library packages.
const Module = "github.com/torpor-dev/torpor"

// Graph maps an import path to the import paths its non-test files import.
type Graph map[string][]string

// Rule forbids the packages From selects to depend, directly or through
// other packages, on any package Forbid selects. A pattern is an import
// path, or a path followed by "/..." for it and every package under it.
//
// A rule whose From selects no package is reported (a renamed package must
// not empty a rule silently), unless it is Pending: a rule for a package on
// its way into the module, which applies from the day it exists.
type Rule struct {
	Name    string
	From    []string
	Forbid  []string
	Pending bool
}

// Violation is a broken rule. For a forbidden dependency Path runs from
// the constrained package to the forbidden one, each element importing the
// next; Msg, when set, says what is wrong in words (the layer table's
// checks set it).
type Violation struct {
	Rule string
	Path []string
	Msg  string
}

func (v Violation) String() string {
	if v.Msg != "" {
		return v.Rule + ": " + v.Msg
	}
	if len(v.Path) == 0 {
		return v.Rule + ": selects no package (a pattern is stale)"
	}
	path := rel(v.Path)
	return fmt.Sprintf("%s: %s depends on %s (%s)", v.Rule, path[0], path[len(path)-1], strings.Join(path, " → "))
}

// rel strips Module from the module's import paths.
func rel(path []string) []string {
	out := make([]string, len(path))
	for i, p := range path {
		out[i] = strings.TrimPrefix(p, Module+"/")
	}
	return out
}

// Check returns the violations of rules in g, sorted: for each rule, each
// package it selects and each forbidden package reached from it, one
// violation with the shortest import path, unless that path runs through
// another forbidden package (the first one reached stands for the packages
// behind it, so a forbidden module is one violation, not one per package of
// it); and a violation with no Path
// for a rule whose From selects no package of g, so that a renamed
// package cannot empty a rule silently (Pending rules excepted).
func Check(g Graph, rules []Rule) []Violation {
	var out []Violation
	pkgs := g.sorted()
	for _, r := range rules {
		selected := false
		for _, p := range pkgs {
			if !matchAny(r.From, p) {
				continue
			}
			selected = true
			for _, path := range reach(g, p) {
				if matchAny(r.Forbid, path[len(path)-1]) && !slices.ContainsFunc(path[1:len(path)-1], func(q string) bool { return matchAny(r.Forbid, q) }) {
					out = append(out, Violation{Rule: r.Name, Path: path})
				}
			}
		}
		if !selected && !r.Pending {
			out = append(out, Violation{Rule: r.Name})
		}
	}
	return out
}

// sorted returns g's import paths in order.
func (g Graph) sorted() []string {
	pkgs := make([]string, 0, len(g))
	for p := range g {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	return pkgs
}

// inModule reports whether pkg is a package of the module.
func inModule(pkg string) bool { return strings.HasPrefix(pkg, Module+"/") }

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
