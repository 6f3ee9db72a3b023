#!/usr/bin/env bash
# Prints what each dependency costs torpor-agent on armv6: the bytes of its
# symbols (code, read-only data, data; `go tool nm -size`) in the binary
# scripts/cross.sh builds, grouped by module, and the stripped size. The
# symbols leave out the pc-line tables (.gopclntab, about two thirds of the
# code's size again, which -s -w keeps), so a dependency's share of the
# stripped file is about 1.6 times its symbol bytes. docs/footprint.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=${GOARM:-6}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
tags="$(cat scripts/agent-tags)"
go build -tags "$tags" -trimpath -o "$tmp/full" ./cmd/torpor-agent
go build -tags "$tags" -trimpath -ldflags="-s -w $(cat scripts/arm-ldflags)" -o "$tmp/stripped" ./cmd/torpor-agent
# Symbols at or above .bss take no room in the file (fips140/drbg's 32 MiB).
bss="$(readelf -SW "$tmp/full" | awk '$2 == ".bss" { print $4 }')"
go tool nm -size "$tmp/full" | awk -v stripped="$(stat -c %s "$tmp/stripped")" -v bss="$bss" '
function group(p) {
	if (p ~ /^github\.com\/torpor-dev\/torpor\/mls/) return "torpor: mls"
	if (p ~ /^github\.com\/torpor-dev\/torpor\/(runtime|cmd)/) return "torpor: runtime, cmd"
	if (p ~ /^github\.com\/torpor-dev\/torpor\/(transport\/mqtt|store\/mqttsession)/) return "torpor: MQTT (transport/mqtt, store/mqttsession)"
	if (p ~ /^github\.com\/torpor-dev\/torpor\/(internal\/http1|transport\/link\/internal\/wsclient)/) return "torpor: internal/http1, link/internal/wsclient"
	if (p ~ /^github\.com\/torpor-dev\/torpor\/(transport|session)/) return "torpor: session, link, a2a, bearer"
	if (p ~ /^github\.com\/torpor-dev\/torpor\//) return "torpor: other (did, governed, pulse, wake, store, internal)"
	if (p ~ /^main$/) return "torpor: runtime, cmd"
	if (p ~ /^github\.com\/eclipse\/paho/) return "github.com/eclipse/paho.golang"
	if (p ~ /^github\.com\/gorilla\/websocket/) return "github.com/gorilla/websocket (via autopaho)"
	if (p ~ /^golang\.org\/x\/net/) return "golang.org/x/net/proxy (via autopaho)"
	if (p ~ /^github\.com\/(fxamacker|x448)/) return "github.com/fxamacker/cbor/v2"
	if (p ~ /^go\.etcd\.io\/bbolt/) return "go.etcd.io/bbolt"
	if (p ~ /^golang\.org\/x\/sys/) return "golang.org/x/sys"
	if (p ~ /^github\.com\/coder\/websocket/) return "github.com/coder/websocket"
	if (p ~ /^periph\.io/) return "periph.io (GPIO)"
	if (p ~ /^github\.com\/gowebpki/) return "github.com/gowebpki/jcs"
	if (p ~ /^mime$/) return "std: mime (media types, transport/mqtt/envelope)"
	if (p ~ /^(net\/http|net\/textproto|mime|vendor\/golang\.org\/x\/(net\/http|net\/idna|text)|compress|hash\/crc32)/) return "std: net/http (+ textproto, idna, gzip)"
	if (p ~ /^(crypto|vendor\/golang\.org\/x\/crypto|golang\.org\/x\/crypto|math\/big|encoding\/(asn1|pem))/) return "std: crypto (tls, x509, ecdsa, ed25519, hpke...)"
	if (p ~ /^(net|vendor\/golang\.org\/x\/net\/dns)/) return "std: net (+ DNS)"
	if (p ~ /^regexp/) return "std: regexp"
	if (p ~ /^encoding\/json/) return "std: encoding/json"
	if (p ~ /^log/) return "std: log, log/slog"
	if (p ~ /^(runtime|internal\/runtime|go:|sync|internal\/(abi|bytealg|cpu|sync|godebug|poll|syscall)|syscall|reflect)/) return "std: runtime, reflect, syscall, type data"
	return "std: other (fmt, os, time, strconv, unicode, sort...)"
}
function pad(h) { while (length(h) < 16) h = "0" h; return h }
$3 != "B" && $3 != "b" && $3 != "U" && pad($1) < pad(bss) {
	name = $4; for (i = 5; i <= NF; i++) name = name " " $i
	sub(/^go:(itab|type)\.\*?/, "", name); sub(/^type:\.?(eq\.)?\*?/, "", name); sub(/^\.eq\./, "", name)
	last = 0; for (j = 1; j <= length(name); j++) if (substr(name, j, 1) == "/") last = j
	rest = substr(name, last + 1); d = index(rest, "."); p = d > 0 ? substr(name, 1, last + d - 1) : name
	if (p ~ /^go:func/) p = "go:func"
	sz[group(p)] += $2; total += $2
}
END {
	for (g in sz) printf "%9d  %s\n", sz[g], g | "sort -rn"
	close("sort -rn")
	printf "%9d  all symbols in the file\n%9d  stripped binary (-s -w)\n", total, stripped
}'
