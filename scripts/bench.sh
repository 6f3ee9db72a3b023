#!/usr/bin/env bash
# Runs the benchmarks. Figures that the docs compare are measured side by side
# in one run (see docs/performance.md), never asserted by tests.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" ./...
# Side-by-side benchmarks against other stacks (ts-mls) live under test/ behind the integration tag.
go test -tags integration -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" ./test/interop/...
