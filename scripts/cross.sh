#!/usr/bin/env bash
# Cross-builds every binary for the ARM targets Torpor runs on, statically
# (CGO_ENABLED=0), reproducibly (-trimpath) and stripped (-s -w), then
# prints their sizes. Output: bin/<target>/<binary>.
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
printf '%-8s %-14s %10s\n' target binary bytes
for t in "${targets[@]}"; do
  read -r arch arm name <<<"$t"
  out="bin/$name"
  mkdir -p "$out"
  [ "$arm" = - ] && arm=
  GOOS=linux GOARCH=$arch GOARM=$arm go build -trimpath -buildvcs=auto -ldflags="-s -w" -o "$out/" ./cmd/torpor-relay ./cmd/torporctl
  GOOS=linux GOARCH=$arch GOARM=$arm go build -tags "$agent_tags" -trimpath -buildvcs=auto -ldflags="-s -w" -o "$out/" ./cmd/torpor-agent
  for b in torpor-agent torpor-relay torporctl; do
    printf '%-8s %-14s %10d\n' "$name" "$b" "$(stat -c %s "$out/$b")"
  done
done
