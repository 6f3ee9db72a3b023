#!/usr/bin/env bash
# Installs what `make check` needs on a Debian machine with Go: apt packages,
# npm packages for the interop tests, binfmt registration for qemu-user.
# Idempotent: anything already present is left alone. Needs root (CI runs as
# root) or sudo when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# apt packages: command -> package. Extended as tests come to need them.
declare -A need=()
missing=()
for cmd in "${!need[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_ apt-get update -qq
  sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
