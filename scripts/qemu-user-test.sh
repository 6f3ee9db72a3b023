#!/usr/bin/env bash
# Runs the unit tests of the packages that matter on the device under
# qemu-user, for every ARM target Torpor ships:
#   armv6  GOARCH=arm GOARM=6 with QEMU_CPU=arm1176 (Pi Zero/1: a binary built
#          for a newer GOARM dies with SIGILL, so a wrong GOARM fails here)
#   armv7  GOARCH=arm GOARM=7 with QEMU_CPU=cortex-a7
#   arm64  GOARCH=arm64      with QEMU_CPU=cortex-a53
#
# Usage: scripts/qemu-user-test.sh [-t armv6,armv7,arm64] [PACKAGE...]
# Without packages it tests the device packages: store/..., wake/...,
# boards/..., did/..., governed/..., clock/..., internal/atomicfile, mls/...,
# session/..., runtime/..., pulse, internal/canon (the JCS behind every
# signature), the device link's transport/link/... (its tests run the client
# against the server), transport/a2a and transport/bearer, and the MQTT
# management client transport/mqtt.
#
# How it saves time (measured figures in docs/boards.md):
#   - Each target's test binaries are compiled by one `go test -c -o DIR/`
#     (the go command compiles in parallel, and links each binary once); then
#     every binary of every target runs in one pool of $QEMU_USER_JOBS jobs
#     (default: the number of CPUs), the slowest first, each in its package
#     directory, through binfmt_misc with QEMU_CPU set.
#   - The MLS working group's vector suite (mls/vectors, and the *Vectors and
#     TestPassiveClient* tests of mls) runs on one 32-bit target,
#     $QEMU_USER_VECTORS (default armv7). It checks our encodings and key
#     derivations, which do not depend on the target beyond its word size, and
#     under armv6 emulation it alone took as long as every other package. The
#     other targets run mls's own tests with -test.short and without those.
# If binfmt is not registered the binaries run as `qemu-arm-static -cpu CPU`
# instead (scripts/setup.sh registers it).
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0 GOOS=linux

targets="armv6,armv7,arm64"
if [ "${1:-}" = -t ]; then targets=$2; shift 2; fi
vectors=${QEMU_USER_VECTORS:-armv7}
jobs=${QEMU_USER_JOBS:-$(nproc)}

if [ $# -gt 0 ]; then
  pkgs=("$@")
else
  pkgs=(./store/... ./wake/... ./boards/... ./did/... ./governed/... ./clock/... ./internal/atomicfile
    ./mls/... ./session/... ./runtime/... ./pulse ./internal/canon ./transport/link/... ./transport/a2a ./transport/bearer
    ./transport/mqtt/...)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/torpor-qemu-user.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

binfmt_ok() { grep -qx enabled "/proc/sys/fs/binfmt_misc/qemu-$1" 2>/dev/null; }

# target NAME sets arch, arm, cpu and q (the qemu-user binary suffix).
target() {
  case $1 in
    armv6) arch=arm   arm=6 cpu=arm1176    q=arm ;;
    armv7) arch=arm   arm=7 cpu=cortex-a7  q=arm ;;
    arm64) arch=arm64 arm=  cpu=cortex-a53 q=aarch64 ;;
    *) echo "qemu-user-test: unknown target $1 (want armv6, armv7, arm64)" >&2; exit 2 ;;
  esac
}

# Packages with tests, as "name dir" (go test -c -o DIR/ writes name.test).
# store/jsstore is the relay's JetStream store, not a device package, and
# so are the relay's stores whose tests start nats-server through
# store/jsstore/jsserver (store/updaterepo): nats-server panics with an
# unaligned 64-bit atomic on 32-bit ARM (nats-server v2.15.3,
# server/monitor.go metaClusterSnapshotStats). They run natively.
mapfile -t listed < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Name}} {{.Dir}} {{.ImportPath}} ,{{join .TestImports ","}},{{join .XTestImports ","}},{{end}}' "${pkgs[@]}" |
  awk '$3 != "github.com/torpor-dev/torpor/store/jsstore" && $4 !~ /,github.com\/torpor-dev\/torpor\/store\/jsstore\/jsserver,/ { print $1, $2, $3 }')
[ ${#listed[@]} -gt 0 ] || { echo "qemu-user-test: no packages with tests" >&2; exit 1; }

IFS=, read -ra want <<<"$targets"
runs=()  # "target import-path dir binary" lines for the pool
for t in "${want[@]}"; do
  target "$t"
  if ! binfmt_ok "$q" && ! command -v "qemu-$q-static" >/dev/null; then
    echo "qemu-user-test: neither binfmt nor qemu-$q-static: run scripts/setup.sh" >&2
    exit 1
  fi
  # go test -c -o DIR/ names each binary after its package, so packages
  # that share a name (mls/internal/wire, transport/link/wire) go into
  # separate groups, each compiled into its own directory.
  declare -A seen=()
  groups=()
  n=0
  for l in "${listed[@]}"; do
    read -r name dir path <<<"$l"
    if [ "$t" != "$vectors" ] && [ "$path" = github.com/torpor-dev/torpor/mls/vectors ]; then continue; fi
    g=${seen[$name]:-0}
    seen[$name]=$((g + 1))
    groups[g]="${groups[g]:-} $path"
    runs+=("$t $path $dir $work/$t/$g/$name.test")
    n=$((n + 1))
  done
  s=$(date +%s)
  for g in "${!groups[@]}"; do
    read -ra build <<<"${groups[g]}"
    GOARCH=$arch GOARM=$arm go test -c -trimpath -o "$work/$t/$g/" "${build[@]}" | grep -v 'no test files' || true
  done
  unset seen
  for r in "${runs[@]}"; do
    read -r rt _ _ bin <<<"$r"
    [ "$rt" != "$t" ] || [ -x "$bin" ] || { echo "qemu-user-test: building $t test binaries failed" >&2; exit 1; }
  done
  echo "== qemu-user $t: built $n test binaries (GOARCH=$arch${arm:+ GOARM=$arm}) in $(( $(date +%s) - s ))s"
done

# runone TARGET IMPORTPATH DIR BINARY runs one test binary and prints one
# line; its output is kept in BINARY.log and printed when it fails.
runone() {
  local t=$1 path=$2 dir=$3 bin=$4 s rc=0
  target "$t"
  local flags=(-test.timeout=10m)
  if [ "$t" != "$vectors" ] && [ "$path" = github.com/torpor-dev/torpor/mls ]; then
    flags+=(-test.short "-test.skip=Vectors\$|^TestPassiveClient")
  fi
  s=$(date +%s%3N)
  if binfmt_ok "$q"; then
    (cd "$dir" && QEMU_CPU=$cpu "$bin" "${flags[@]}") >"$bin.log" 2>&1 || rc=$?
  else
    (cd "$dir" && "qemu-$q-static" -cpu "$cpu" "$bin" "${flags[@]}") >"$bin.log" 2>&1 || rc=$?
  fi
  local ms=$(( $(date +%s%3N) - s ))
  local d="$((ms / 1000)).$((ms % 1000 / 100))s"
  if [ $rc -eq 0 ]; then
    printf 'ok    %-6s %-55s %s\n' "$t" "$path" "$d"
  else
    printf 'FAIL  %-6s %-55s %s (exit %d)\n' "$t" "$path" "$d" "$rc"
    sed 's/^/    /' "$bin.log"
    return 1
  fi
}

# The slowest binaries first (MLS, the sessions, the stores), so that the
# pool does not end waiting on one long run; armv6 is the slowest target.
order() {
  local r t path w
  for r in "${runs[@]}"; do
    read -r t path _ _ <<<"$r"
    case $path in
      */mls) w=100 ;; */mls/vectors) w=60 ;; */session) w=40 ;; */runtime) w=20 ;; */store/*|*/governed) w=10 ;; *) w=1 ;;
    esac
    case $t in armv6) w=$((w * 3)) ;; armv7) w=$((w * 2)) ;; esac
    echo "$w $r"
  done | sort -rn | cut -d' ' -f2-
}

echo "== qemu-user: running ${#runs[@]} test binaries, $jobs at a time; MLS vectors on $vectors"
s=$(date +%s)
rc=0
running=0
while read -r r; do
  if [ $running -ge "$jobs" ]; then
    wait -n || rc=1
    running=$((running - 1))
  fi
  # shellcheck disable=SC2086
  runone $r &
  running=$((running + 1))
done < <(order)
while [ $running -gt 0 ]; do
  wait -n || rc=1
  running=$((running - 1))
done
echo "== qemu-user: ran in $(( $(date +%s) - s ))s; total $(elapsed)s"
exit $rc
