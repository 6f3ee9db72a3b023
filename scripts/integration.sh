#!/usr/bin/env bash
# Runs the integration tests under test/ (`make test-integration`, the last
# step of `make check`) with every tool they need required
# (TORPOR_REQUIRE_TOOLS=1: a missing tool fails, it never skips).
#
# test/qemu's emulated guests keep a core busy for about twelve minutes,
# five of them in TestUpdatePowerCut alone. In a single `go test
# ./test/...` the package started after most others (they run in
# import-path order) and ran its last eight minutes alone, with the second
# core idle. So three `go test` runs start at once: TestUpdatePowerCut,
# the rest of test/qemu, and every other package two at a time. The two
# QEMU runs print their output as it comes, each line behind "qemu | " or
# "qemu-update | ".
set -euo pipefail
cd "$(dirname "$0")/.."
export TORPOR_REQUIRE_TOOLS=1
timeout="${INTEGRATION_TIMEOUT:-40m}"
rcs=$(mktemp -d)
trap 'rm -rf "$rcs"' EXIT

# lane NAME ARGS... runs go test ARGS in the background, its output behind
# "NAME | ", and leaves its exit status in $rcs/NAME.
lane() {
  local name=$1
  shift
  { rc=0; go test -tags integration -count=1 -timeout "$timeout" "$@" 2>&1 || rc=$?; echo "$rc" > "$rcs/$name"; } |
    sed -u "s/^/$name | /" &
}

lane qemu-update -run '^TestUpdatePowerCut$' ./test/qemu/
lane qemu -skip '^TestUpdatePowerCut$' ./test/qemu/...

mapfile -t rest < <(go list -tags integration ./test/... | grep -v '/test/qemu\(/\|$\)')
restrc=0
go test -tags integration -count=1 -timeout "$timeout" "${rest[@]}" || restrc=$?

wait
failed=""
for name in qemu-update qemu; do
  if [ "$(cat "$rcs/$name" 2>/dev/null)" != 0 ]; then failed="$failed $name"; fi
done
if [ "$restrc" != 0 ]; then failed="$failed others"; fi
if [ -n "$failed" ]; then
  echo "integration: failed:$failed (qemu-update: TestUpdatePowerCut; qemu: the rest of test/qemu; others: the other packages)" >&2
  exit 1
fi
