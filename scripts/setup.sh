#!/usr/bin/env bash
# Installs what `make check` needs on a Debian machine with Go: apt packages,
# npm packages for the interop tests, binfmt registration for qemu-user.
# Idempotent: anything already present is left alone. Needs root (CI runs as
# root) or sudo when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# apt packages: command -> package. Extended as tests come to need them.
declare -A need=(
  [node]=nodejs [npm]=npm
  [qemu-arm-static]=qemu-user-static [qemu-system-aarch64]=qemu-system-arm [dtc]=device-tree-compiler
  [systemd-analyze]=systemd
  [mosquitto]=mosquitto [mosquitto_sub]=mosquitto-clients
  [gcc]=gcc # go test -race (make race) needs cgo and a C compiler
  [mkfs.ext4]=e2fsprogs # the power-cut test's virtio disk (test/qemu)
  [promtool]=prometheus # test/dashboards: promtool check rules packaging/prometheus/torpor-rules.yml
  [chromium]=chromium   # make test-browser: the fleet console in a real browser (chromedp)
  # make test-updates: the rauc hand-off (test/updates/rauc_integration_test.go)
  [rauc]=rauc [mksquashfs]=squashfs-tools [dbus-daemon]=dbus-daemon [openssl]=openssl
)
missing=()
for cmd in "${!need[@]}"; do
  # /usr/sbin (mosquitto) is not on a normal user's PATH.
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || missing+=("${need[$cmd]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_ apt-get update -qq
  sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages for the ts-mls interop peer (test/interop/node): npm ci when
# node_modules is missing or package-lock.json changed since the last
# install (a stamp in node_modules records the lock's hash).
interop_node=test/interop/node
if command -v npm >/dev/null 2>&1; then
  lock_sum=$(sha256sum "$interop_node/package-lock.json" | cut -d' ' -f1)
  stamp="$interop_node/node_modules/.torpor-lock-sha256"
  if [ ! -d "$interop_node/node_modules" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
    echo "setup: npm ci in $interop_node"
    (cd "$interop_node" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
    echo "$lock_sum" >"$stamp"
  fi
else
  echo "setup: npm not found; the ts-mls interop tests need Node.js 20 and npm" >&2
fi

# npm packages for the @a2a-js/sdk client test of the relay (test/relay/node),
# installed the same way.
relay_node=test/relay/node
if command -v npm >/dev/null 2>&1; then
  lock_sum=$(sha256sum "$relay_node/package-lock.json" | cut -d' ' -f1)
  stamp="$relay_node/node_modules/.torpor-lock-sha256"
  if [ ! -d "$relay_node/node_modules" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
    echo "setup: npm ci in $relay_node"
    (cd "$relay_node" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
    echo "$lock_sum" >"$stamp"
  fi
fi

# binfmt_misc for qemu-user (scripts/qemu-user-test.sh): kernel state, so it
# is registered on every run where missing. qemu-user-static ships the
# entries as systemd binfmt.d files, which nothing loads without systemd.
if [ -d /proc/sys/fs/binfmt_misc ] || sudo_ modprobe binfmt_misc 2>/dev/null; then
  mountpoint -q /proc/sys/fs/binfmt_misc || sudo_ mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  for a in arm aarch64; do
    if [ ! -e "/proc/sys/fs/binfmt_misc/qemu-$a" ] && [ -e "/usr/lib/binfmt.d/qemu-$a.conf" ]; then
      echo "setup: registering binfmt qemu-$a"
      sudo_ sh -c "cat /usr/lib/binfmt.d/qemu-$a.conf > /proc/sys/fs/binfmt_misc/register"
    fi
  done
fi

# Debian's arm64 kernel for the qemu-system tests (test/qemu), cached.
./scripts/qemu-kernel.sh >/dev/null
