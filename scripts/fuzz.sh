#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME (default 30s) each.
# Targets are discovered with `go test -list`, so a new Fuzz function is
# picked up without editing this file.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-30s}"
n=0
for pkg in $(go list ./...); do
  for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "fuzz: $pkg $f ($FUZZTIME)"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "$pkg"
    n=$((n+1))
  done
done
echo "fuzz: $n targets, $FUZZTIME each"
