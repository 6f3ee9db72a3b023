#!/usr/bin/env bash
# Runs every benchmark once (-benchtime=1x), so that a benchmark that no
# longer runs fails `make check` (scripts/check.sh) instead of the next
# `make bench`, and checks that each one reports its CPU per operation
# (cpu-ns/op, internal/benchcpu) beside its rate.
#
# Beside the unit benchmarks, it runs the integration-tagged ones that
# scripts/bench.sh runs (test/interop, test/mqtt, test/cluster, test/link,
# test/relay, test/tenants),
# with the tools they need required (TORPOR_REQUIRE_TOOLS=1, as in
# `make check`), and test/qemu's BenchmarkEmptyWakeVM on its arm64/ext4
# target, which boots three guests under emulation (d2faa43's agent, this
# tree's and the floor, test/qemu/guest/wakefloor; its other two targets
# run the same code on other builds and file systems, and would add
# five guests and minutes to make check;
# CHECK_BENCH_VM=0 leaves it out of a run on a machine without qemu,
# never in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
export TORPOR_REQUIRE_TOOLS=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench . -benchtime=1x ./... | tee "$out"
go test -tags integration -run '^$' -bench . -benchtime=1x ./test/interop/... ./test/mqtt/... ./test/cluster/ ./test/link/ ./test/relay/ ./test/tenants/ | tee -a "$out"
if [ "${CHECK_BENCH_VM:-1}" = 0 ] && [ "${CI:-}" != true ]; then
  echo "bench-once: CHECK_BENCH_VM=0: BenchmarkEmptyWakeVM (test/qemu) left out"
else
  go test -tags integration -run '^$' -bench 'EmptyWakeVM/arm64/ext4' -benchtime=1x -timeout 60m ./test/qemu/ | tee -a "$out"
fi
# The fleet console's 10,000-device benchmark (issue 27) must be among them.
if ! grep -q '^BenchmarkFleet10k/page=fleet' "$out"; then
  echo "bench-once: transport/relay/console BenchmarkFleet10k did not run" >&2
  exit 1
fi
# A result line is the name, the iterations, then value-unit pairs.
missing=$(awk '/^Benchmark[^ \t]*[ \t]+[0-9]+[ \t]/ && !/ cpu-ns\/op/ { print $1 }' "$out")
if [ -n "$missing" ]; then
  echo "bench-once: benchmarks that report no cpu-ns/op (internal/benchcpu):" >&2
  echo "$missing" >&2
  exit 1
fi
echo "bench-once: $(grep -c '^Benchmark' "$out") benchmark results, each with cpu-ns/op"
