#!/usr/bin/env bash
# Cross-builds every binary for the ARM targets Torpor runs on, statically
# (CGO_ENABLED=0), reproducibly (-trimpath) and stripped (-s -w), then
# prints their sizes against their budgets and fails when one is over.
# Output: bin/<target>/<binary>.
#
# Budgets (bytes, stripped, linux/arm GOARM=6, the smallest boards; issue 30
# and docs/footprint.md): torpor-agent 12 MiB, torporctl 12 MiB. The agent's
# was 8 MiB until it linked the update client (runtime/update, then with
# go-tuf/v2, 2.2 MiB; issue 31 allows 12 MiB with it); with its own TUF
# verifier (runtime/update/tuf) instead of go-tuf it is 8.5 MiB. torporctl
# stays under its budget because it links no relay, broker, queue store,
# NATS server or agent runtime (internal/deptest); the conformance runner,
# which links all of them, is its own binary, torpor-conformance, which has
# no budget.
#
# torpor-agent is built with the tag nethttpomithttp2, which leaves net/http's
# HTTP/2 out of a build that links net/http (380 KiB on armv6). The agent no
# longer does (internal/deptest; its HTTP/1.1 is internal/http1), so the tag
# changes nothing today; it stays so that net/http coming back does not bring
# HTTP/2 with it (docs/footprint.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
agent_tags="$(cat scripts/agent-tags)"
targets=("arm 6 armv6" "arm 7 armv7" "arm64 - arm64")
bins=(torpor-agent torpor-relay torporctl torpor-conformance)
# budget prints the armv6 budget of binary $1 in bytes, or nothing.
budget() {
  case "$1" in
    torpor-agent) echo $((12 << 20)) ;;
    torporctl) echo $((12 << 20)) ;;
  esac
}
over=0
printf '%-8s %-19s %10s %10s\n' target binary bytes budget
for t in "${targets[@]}"; do
  read -r arch arm name <<<"$t"
  out="bin/$name"
  mkdir -p "$out"
  [ "$arm" = - ] && arm=
  ldflags="-s -w"
  # 32-bit ARM Linux has 4 KiB pages only: segments aligned to them, not
  # to the linker's 64 KiB default, keep up to 124 KiB of padding off the
  # flash (scripts/arm-ldflags; docs/footprint.md).
  [ "$arch" = arm ] && ldflags="$ldflags $(cat scripts/arm-ldflags)"
  GOOS=linux GOARCH=$arch GOARM=$arm go build -trimpath -buildvcs=auto -ldflags="$ldflags" -o "$out/" ./cmd/torpor-relay ./cmd/torporctl ./cmd/torpor-conformance
  GOOS=linux GOARCH=$arch GOARM=$arm go build -tags "$agent_tags" -trimpath -buildvcs=auto -ldflags="$ldflags" -o "$out/" ./cmd/torpor-agent
  for b in "${bins[@]}"; do
    size=$(stat -c %s "$out/$b")
    max=
    [ "$name" = armv6 ] && max=$(budget "$b")
    printf '%-8s %-19s %10d %10s\n' "$name" "$b" "$size" "${max:--}"
    if [ -n "$max" ] && [ "$size" -gt "$max" ]; then
      echo "cross: $name $b is $size bytes, over its budget of $max" >&2
      over=1
    fi
  done
done
exit "$over"
