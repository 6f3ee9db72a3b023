#!/usr/bin/env bash
# make demo: builds torpor-relay, torpor-agent, torporctl and the demo's
# orchestrator (cmd/torpor-demo) into a temporary directory, runs them there
# on loopback, and removes the directory at the end. Nothing is written
# elsewhere (apart from Go's build cache) and nothing is left running: the
# orchestrator runs in a process group of its own, which the trap below
# ends whatever happens. Set TORPOR_DEMO_KEEP=1 to keep the directory
# (logs, stores, configuration files) for a look afterwards. Set
# TORPOR_DEMO_CLUSTER=1 to run the same story on three relays with
# --store jetstream over a 3-node NATS JetStream cluster, which the
# orchestrator embeds (its files also go into the directory). Set
# TORPOR_DEMO_UPDATE=1 to tell the story of one agent update rollout
# instead (docs/updates.md).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d "${TMPDIR:-/tmp}/torpor-demo.XXXXXX")
chmod 700 "$tmp"
pgid=
cleanup() {
  status=$?
  if [ -n "$pgid" ]; then
    kill -TERM -- "-$pgid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 -- "-$pgid" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL -- "-$pgid" 2>/dev/null || true
  fi
  if [ "${TORPOR_DEMO_KEEP:-}" = 1 ]; then
    echo "demo: kept $tmp"
  else
    rm -rf "$tmp"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "demo: building the binaries into $tmp/bin"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$tmp/bin/" ./cmd/torpor-relay ./cmd/torpor-agent ./cmd/torporctl ./cmd/torpor-demo
story=()
if [ "${TORPOR_DEMO_UPDATE:-}" = 1 ]; then
  # Two builds of the agent stamped 1.0.0 (the packaged one) and 2.0.0 (the
  # update), as scripts/packages.sh stamps a package's version.
  stamp=github.com/torpor-dev/torpor/internal/version.stamp
  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X $stamp=1.0.0" -o "$tmp/bin/" ./cmd/torpor-agent
  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X $stamp=2.0.0" -o "$tmp/bin/update/" ./cmd/torpor-agent
  story=(-update)
fi

# set -m gives the orchestrator a process group of its own (pgid = its
# pid); the relay and agents it starts stay in that group.
cluster=()
if [ "${TORPOR_DEMO_CLUSTER:-}" = 1 ]; then
  cluster=(-cluster)
fi
set -m
"$tmp/bin/torpor-demo" -bin "$tmp/bin" -dir "$tmp/run" "${cluster[@]}" "${story[@]}" "$@" &
pgid=$!
set +m
wait "$pgid"
