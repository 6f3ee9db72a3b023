#!/usr/bin/env bash
# Builds Torpor's Debian packages with nfpm, a Go-native packager:
# torpor-agent for arm64, armhf (GOARM=7) and armel (GOARM=6), torpor-relay
# for amd64 and arm64, and torporctl for all four (torpor-conformance, a
# developer's tool, is not packaged). The package contents,
# systemd units and maintainer scripts are in packaging/ (docs/packages.md
# explains them).
#
# Binaries are built as scripts/cross.sh builds them (CGO_ENABLED=0,
# -trimpath, stripped) into the same bin/<target>/ directories, so after
# `make cross` go build only confirms they are up to date.
#
# nfpm is installed from the module cache into bin/tools (go install
# module@version: it never touches go.mod, whose dependency graph nfpm's
# would swell) once, rather than `go run` nine times.
#
# Environment: OUT (default bin/packages) is where the .deb files go;
# VERSION overrides the version derived from git describe.
# `scripts/packages.sh --version` prints the version and builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0 GOOS=linux
NFPM_MODULE=github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0
out=${OUT:-bin/packages}

# version prints the Debian version: 1.2.3 on a tag v1.2.3, 1.2.3+4.gHASH
# four commits after it, 0.0.0+gHASH with no tag; ".dirty" (or "+dirty")
# when tracked files differ from HEAD. A pre-release tag's "-" becomes "~",
# which Debian sorts before the release.
version() {
	if [ -n "${VERSION:-}" ]; then
		echo "$VERSION"
		return
	fi
	local d v
	if d=$(git describe --tags --long --match 'v[0-9]*' 2>/dev/null); then
		local hash=${d##*-} rest=${d%-*}
		local n=${rest##*-} tag=${rest%-*}
		v=${tag#v}
		v=${v//-/\~}
		[ "$n" = 0 ] || v="$v+$n.$hash"
	else
		v="0.0.0+g$(git rev-parse --short=12 HEAD)"
	fi
	if ! git diff --quiet HEAD -- 2>/dev/null; then
		case $v in *+*) v="$v.dirty" ;; *) v="$v+dirty" ;; esac
	fi
	echo "$v"
}

VERSION=$(version)
if [ "${1:-}" = --version ]; then
	echo "$VERSION"
	exit 0
fi
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
export VERSION SOURCE_DATE_EPOCH

GOBIN="$PWD/bin/tools" go install "$NFPM_MODULE"
nfpm=bin/tools/nfpm

# bin/ directory, GOARCH, GOARM, Debian architecture, binaries.
targets=(
	"amd64 amd64 - amd64 torpor-relay torporctl"
	"arm64 arm64 - arm64 torpor-agent torpor-relay torporctl"
	"armv7 arm 7 armhf torpor-agent torporctl"
	"armv6 arm 6 armel torpor-agent torporctl"
)

# Stripped like scripts/cross.sh's, and stamped with the package version,
# which --version, the Agent Card and the device status then report.
ldflags="-s -w -X github.com/torpor-dev/torpor/internal/version.stamp=$VERSION"

mkdir -p "$out"
rm -f "$out"/torpor-agent_*.deb "$out"/torpor-relay_*.deb "$out"/torporctl_*.deb
for t in "${targets[@]}"; do
	read -r dir arch arm deb bins <<<"$t"
	pkgs=()
	for b in $bins; do pkgs+=("./cmd/$b"); done
	mkdir -p "bin/$dir"
	[ "$arm" = - ] && arm=
	for p in "${pkgs[@]}"; do
		tags=
		# The agent's build tags, as in scripts/cross.sh.
		[ "$p" = ./cmd/torpor-agent ] && tags="$(cat scripts/agent-tags)"
		flags="$ldflags"
		# 32-bit ARM: segments on 4 KiB pages, as scripts/cross.sh builds them.
		[ "$arch" = arm ] && flags="$flags $(cat scripts/arm-ldflags)"
		GOARCH=$arch GOARM=$arm go build -tags "$tags" -trimpath -buildvcs=auto -ldflags="$flags" -o "bin/$dir/" "$p"
	done
	for b in $bins; do
		scripts/copyright.sh "bin/$dir/$b" >"bin/$dir/$b.copyright"
		DEB_ARCH=$deb BIN="bin/$dir" "$nfpm" package --packager deb \
			--config "packaging/nfpm/$b.yaml" --target "$out/" >/dev/null
	done
done

printf '%-52s %10s\n' package bytes
for f in "$out"/*.deb; do
	printf '%-52s %10d\n' "$(basename "$f")" "$(stat -c %s "$f")"
done
