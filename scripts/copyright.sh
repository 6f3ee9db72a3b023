#!/usr/bin/env bash
# Writes the Debian copyright file (machine-readable format 1.0) of one
# package to standard output: Torpor's own licence, then every Go module
# statically linked into the package's binaries, with the licence text the
# module ships (MIT and BSD licences require that a binary carry it).
#
#   scripts/copyright.sh BINARY...
#
# The modules come from the binaries' build information (go version -m), so
# the list is exactly what was linked. A module whose licence this script
# does not recognise fails it: a new dependency's licence gets a look before
# it ships. scripts/packages.sh runs it for each package.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: scripts/copyright.sh BINARY..." >&2; exit 2; }
modcache=$(go env GOMODCACHE)

# spdx names the licence of a licence text on standard input.
spdx() {
	local t
	t=$(tr -s ' \n\t' ' ')
	case $t in
	*"covered by two different licenses: MIT and Apache"*) echo "MIT and Apache-2.0" ;;
	*"Apache License"*"Version 2.0"*) echo Apache-2.0 ;;
	*"Eclipse Public License - v 2.0"*) echo EPL-2.0 ;;
	*"Permission is hereby granted, free of charge"*) echo MIT ;;
	*"Permission to use, copy, modify, and distribute this software for any purpose with or without fee"*) echo ISC ;;
	*"Redistribution and use in source and binary forms"*"Neither the name"*) echo BSD-3-Clause ;;
	*"Redistribution and use in source and binary forms"*) echo BSD-2-Clause ;;
	*) return 1 ;;
	esac
}

# escape module paths as the module cache stores them (upper case → !lower).
cachedir() { echo "$modcache/$(echo "$1" | sed 's/[A-Z]/!\L&/g')@$2"; }

cat <<HEAD
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: torpor
Upstream-Contact: Torpor developers <torpor@torpor-dev.invalid>
Source: https://github.com/torpor-dev/torpor

Files: *
Copyright: 2026 The Torpor developers
License: Apache-2.0
Comment: On Debian systems the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
HEAD

go version -m "$@" | awk '$1 == "dep" || $1 == "=>" { print $2, $3 }' | sort -u |
while read -r mod ver; do
	dir=$(cachedir "$mod" "$ver")
	lic=$(find "$dir" -maxdepth 1 -type f \( -iname 'licen[cs]e*' -o -iname 'copying*' \) | sort | head -n 1)
	if [ -z "$lic" ]; then
		echo "copyright: no licence file in $dir" >&2
		exit 1
	fi
	if ! id=$(spdx <"$lic"); then
		echo "copyright: unrecognised licence in $lic; add it to scripts/copyright.sh" >&2
		exit 1
	fi
	printf '\nFiles: go-modules/%s\nComment: Go module %s %s, linked into the binaries.\nCopyright: see the licence text\nLicense: %s\n' "$mod" "$mod" "$ver" "$id"
	if [ "$id" = Apache-2.0 ]; then
		echo " On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0."
	else
		# Continuation lines: one leading space, an empty line as " .".
		sed -e 's/[[:space:]]*$//' -e 's/^$/./' -e 's/^/ /' "$lic"
	fi
done
