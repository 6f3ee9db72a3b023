#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME (default 30s) each.
# Targets are discovered with `go test -list` in every package whose test
# files declare a `func Fuzz…`, so a new Fuzz function is picked up without
# editing this file (and the packages without one are not built for it).
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime runs out while a worker is between inputs
# (go.dev/issue/75804, fixed in Go 1.27). Such a run wrote no failing input;
# it is told apart from a finding by that, and the target's corpus is then
# replayed as a plain test, which must pass. Any other failure fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-30s}"
n=0
raced=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# fuzzpkgs lists the packages with a test file that declares a Fuzz function.
fuzzpkgs() {
  go list -f '{{.ImportPath}}{{range .TestGoFiles}} {{$.Dir}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$.Dir}}/{{.}}{{end}}' ./... |
    while read -r pkg files; do
      if [ -n "$files" ] && grep -q '^func Fuzz' $files; then echo "$pkg"; fi
    done
}
for pkg in $(fuzzpkgs); do
  for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "fuzz: $pkg $f ($FUZZTIME)"
    if go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | tee "$out"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
      n=$((n+1))
      continue
    fi
    if grep -q 'Failing input written to' "$out" || ! grep -q '^    context deadline exceeded$' "$out"; then
      echo "fuzz: $pkg $f failed" >&2
      exit 1
    fi
    echo "fuzz: $f stopped on the fuzztime deadline race (go.dev/issue/75804) without a failing input; replaying its corpus"
    go test -count=1 -run "^${f}\$" "$pkg"
    n=$((n+1))
    raced=$((raced+1))
  done
done
echo "fuzz: $n targets, $FUZZTIME each ($raced hit the deadline race and were replayed)"
