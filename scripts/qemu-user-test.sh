#!/usr/bin/env bash
# Runs the unit tests of the packages that matter on the device under
# qemu-user, for every ARM target Torpor ships:
#   armv6  GOARCH=arm GOARM=6 with QEMU_CPU=arm1176 (Pi Zero/1: a binary built
#          for a newer GOARM dies with SIGILL, so a wrong GOARM fails here)
#   armv7  GOARCH=arm GOARM=7 with QEMU_CPU=cortex-a7
#   arm64  GOARCH=arm64      with QEMU_CPU=cortex-a53
# The test binaries run through binfmt_misc (scripts/setup.sh registers
# qemu-arm and qemu-aarch64); if binfmt is not registered the script says so
# and runs them with `go test -exec qemu-*-static` instead.
#
# Usage: scripts/qemu-user-test.sh [-t armv6,armv7,arm64] [PACKAGE...]
# Without packages it tests the device packages that exist: store/...,
# wake/..., boards/..., did/..., governed/..., mls/..., clock/...,
# internal/atomicfile.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0

targets="armv6,armv7,arm64"
if [ "${1:-}" = -t ]; then targets=$2; shift 2; fi

if [ $# -gt 0 ]; then
  pkgs=("$@")
else
  mapfile -t pkgs < <(go list ./store/... ./wake/... ./boards/... ./did/... ./governed/... ./mls/... \
    ./clock/... ./internal/atomicfile 2>/dev/null)
fi
[ ${#pkgs[@]} -gt 0 ] || { echo "qemu-user-test: no packages to test" >&2; exit 1; }

binfmt_ok() { grep -qx enabled "/proc/sys/fs/binfmt_misc/qemu-$1" 2>/dev/null; }

rc=0
IFS=, read -ra want <<<"$targets"
for t in "${want[@]}"; do
  case $t in
    armv6) arch=arm   arm=6 cpu=arm1176    q=arm ;;
    armv7) arch=arm   arm=7 cpu=cortex-a7  q=arm ;;
    arm64) arch=arm64 arm=  cpu=cortex-a53 q=aarch64 ;;
    *) echo "qemu-user-test: unknown target $t (want armv6, armv7, arm64)" >&2; exit 2 ;;
  esac
  exec_flag=()
  if binfmt_ok "$q"; then
    how="binfmt"
  elif command -v "qemu-$q-static" >/dev/null; then
    how="-exec qemu-$q-static (binfmt not registered: run scripts/setup.sh as root)"
    exec_flag=(-exec "qemu-$q-static")
  else
    echo "qemu-user-test: neither binfmt nor qemu-$q-static: run scripts/setup.sh" >&2
    exit 1
  fi
  echo "== qemu-user $t (GOARCH=$arch${arm:+ GOARM=$arm}, QEMU_CPU=$cpu, $how): ${#pkgs[@]} packages"
  start=$(date +%s)
  if ! QEMU_CPU=$cpu GOOS=linux GOARCH=$arch GOARM=$arm go test -count=1 -timeout 15m "${exec_flag[@]}" "${pkgs[@]}"; then
    rc=1
  fi
  echo "== qemu-user $t: $(( $(date +%s) - start ))s"
done
exit $rc
