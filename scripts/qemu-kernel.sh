#!/usr/bin/env bash
# Fetches Debian's arm64 kernel for the qemu-system-aarch64 tests into a
# cache and prints the directory that holds it:
#   <dir>/vmlinuz                  the kernel Image QEMU boots with -kernel
#   <dir>/config                   its build configuration
#   <dir>/modules/<path>.ko        its modules (gpio_keys.ko, virtio_net.ko, ...)
#   <dir>/release                  the kernel release, e.g. 6.1.0-57-arm64
# The package name carries the kernel ABI (linux-image-6.1.0-57-arm64), and
# the mirror drops old ABIs, so it is resolved from the linux-image-arm64
# metapackage every time; a cached kernel is reused when its ABI is still
# current, or when apt cannot be reached. The cache is
# $TORPOR_KERNEL_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/torpor/kernel;
# <cache>/current links to the newest kernel.
# Adds the arm64 architecture to dpkg (needs root or sudo the first time).
set -euo pipefail
cache="${TORPOR_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/torpor/kernel}"
mkdir -p "$cache"
sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
log() { echo "qemu-kernel: $*" >&2; }

resolve() {
  apt-cache depends linux-image-arm64:arm64 2>/dev/null |
    awk '/Depends: linux-image-[0-9]/{sub(/:arm64$/, "", $2); print $2; exit}'
}

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  log "adding the arm64 architecture to dpkg"
  sudo_ dpkg --add-architecture arm64
  sudo_ apt-get update -qq || true
fi
pkg=$(resolve || true)
if [ -z "$pkg" ]; then
  sudo_ apt-get update -qq || true
  pkg=$(resolve || true)
fi
if [ -z "$pkg" ]; then
  if [ -e "$cache/current/vmlinuz" ]; then
    log "cannot resolve linux-image-arm64 (offline?); using the cached $(readlink "$cache/current")"
    readlink -f "$cache/current"
    exit 0
  fi
  log "cannot resolve linux-image-arm64:arm64 and nothing is cached"
  exit 1
fi

dir="$cache/$pkg"
if [ ! -e "$dir/vmlinuz" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  log "downloading $pkg:arm64"
  # apt's sandbox user cannot write into a private temp dir; download as root.
  (cd "$tmp" && apt-get download -o APT::Sandbox::User=root "$pkg:arm64" >&2)
  dpkg-deb -x "$tmp"/*.deb "$tmp/root"
  mkdir -p "$tmp/out"
  release=$(basename "$(ls -d "$tmp"/root/lib/modules/*)")
  cp "$tmp/root/boot/vmlinuz-$release" "$tmp/out/vmlinuz"
  cp "$tmp/root/boot/config-$release" "$tmp/out/config"
  mv "$tmp/root/lib/modules/$release/kernel" "$tmp/out/modules"
  echo "$release" >"$tmp/out/release"
  rm -rf "$dir.partial" && mv "$tmp/out" "$dir.partial" && mv "$dir.partial" "$dir"
  log "cached $release in $dir"
fi
ln -sfn "$pkg" "$cache/current"
echo "$dir"
