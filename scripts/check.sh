#!/usr/bin/env bash
# The whole test suite: what `make check` and CI run. It installs what the
# tests need first (scripts/setup.sh), then runs, in order: lint, the unit
# tests, the unit tests again under the race detector (`make race`: every
# package, since most start goroutines and the rest cost seconds), a short
# fuzz pass, every benchmark once (scripts/bench-once.sh: a benchmark that
# no longer runs, or reports no CPU per operation, fails here), the cross
# builds, and the integration tests under test/ with every tool required
# (a missing tool fails, it never skips).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n== %s (%ds)\n' "$1" $(( $(date +%s) - start )); }

step "setup";       ./scripts/setup.sh
step "lint";        make --no-print-directory lint
step "unit tests";  go test -count=1 ./...
step "race detector"; make --no-print-directory race
step "fuzz (short)"; FUZZTIME="${CHECK_FUZZTIME:-2s}" ./scripts/fuzz.sh
step "benchmarks once"; ./scripts/bench-once.sh
step "cross builds"; ./scripts/cross.sh
step "qemu-user (armv6, armv7, arm64)"; ./scripts/qemu-user-test.sh
step "integration"; make --no-print-directory test-integration
step "done"
