#!/usr/bin/env bash
# make demo. Until the relay and agent land this runs the smallest honest
# end-to-end path that exists and says what it did.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -trimpath -o "$tmp/" ./cmd/torporctl
echo "demo: generating an agent identity in a temporary directory"
"$tmp/torporctl" keygen "$tmp/agent.key"
echo "demo: the relay, agents and sender are not built yet; this demo only made a key."
