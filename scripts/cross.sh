#!/usr/bin/env bash
# Cross-builds every binary for the ARM targets Torpor runs on, statically
# (CGO_ENABLED=0), reproducibly (-trimpath) and stripped (-s -w), then
# prints their sizes. Output: bin/<target>/<binary>.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
targets=("arm 6 armv6" "arm 7 armv7" "arm64 - arm64")
printf '%-8s %-14s %10s\n' target binary bytes
for t in "${targets[@]}"; do
  read -r arch arm name <<<"$t"
  out="bin/$name"
  mkdir -p "$out"
  if [ "$arm" = - ]; then
    GOOS=linux GOARCH=$arch go build -trimpath -buildvcs=auto -ldflags="-s -w" -o "$out/" ./cmd/...
  else
    GOOS=linux GOARCH=$arch GOARM=$arm go build -trimpath -buildvcs=auto -ldflags="-s -w" -o "$out/" ./cmd/...
  fi
  for b in torpor-agent torpor-relay torporctl; do
    printf '%-8s %-14s %10d\n' "$name" "$b" "$(stat -c %s "$out/$b")"
  done
done
