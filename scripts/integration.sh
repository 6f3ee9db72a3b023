#!/usr/bin/env bash
# Runs the integration tests under test/ (`make test-integration`, the last
# step of `make check`) with every tool they need required
# (TORPOR_REQUIRE_TOOLS=1: a missing tool fails, it never skips).
#
# test/qemu, whose emulated guests keep one core busy for about ten
# minutes, runs in a `go test` of its own that starts first, beside the
# one that runs every other package two at a time. In a single `go test
# ./test/...` it started after most packages (they run in import-path
# order) and ran its last eight minutes alone, with the second core idle.
# Its output is printed as it comes, each line behind "qemu | ".
set -euo pipefail
cd "$(dirname "$0")/.."
export TORPOR_REQUIRE_TOOLS=1
timeout="${INTEGRATION_TIMEOUT:-40m}"
qrc=$(mktemp)
trap 'rm -f "$qrc"' EXIT

{ rc=0; go test -tags integration -count=1 -timeout "$timeout" ./test/qemu/... 2>&1 || rc=$?; echo "$rc" > "$qrc"; } |
  sed -u 's/^/qemu | /' &
qemu=$!

mapfile -t rest < <(go list -tags integration ./test/... | grep -v '/test/qemu\(/\|$\)')
restrc=0
go test -tags integration -count=1 -timeout "$timeout" "${rest[@]}" || restrc=$?

wait "$qemu"
qemurc=$(cat "$qrc")
if [ "$restrc" != 0 ] || [ "$qemurc" != 0 ]; then
  echo "integration: failed (test/qemu: exit $qemurc; the other packages: exit $restrc)" >&2
  exit 1
fi
