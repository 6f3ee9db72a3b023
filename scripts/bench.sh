#!/usr/bin/env bash
# Runs the benchmarks. Figures that the docs compare are measured side by side
# in one run (see docs/performance.md), never asserted by tests.
#
# The side-by-side benchmarks against other stacks (ts-mls under Node) and the
# MQTT command round trip (mosquitto) live under test/ behind the integration
# tag. They need tools that scripts/setup.sh installs; TORPOR_REQUIRE_TOOLS=1
# makes a missing tool a failure rather than a skipped comparison.
#
# BenchmarkFleetEnqueue (test/cluster, integration tag) puts the relays on
# NATS JetStream beside the raw JetStream publish rate of the same embedded
# 3-node cluster and beside the bbolt relay (docs/scale-out.md, sizing). It
# runs as a fixed count of requests (FLEET_BENCHTIME, 2000x by default).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export TORPOR_REQUIRE_TOOLS=1
bt="${BENCHTIME:-1s}"
go test -run '^$' -bench . -benchmem -benchtime "$bt" ./...
go test -tags integration -run '^$' -bench . -benchmem -benchtime "$bt" ./test/interop/... ./test/mqtt/...
go test -tags integration -run '^$' -bench FleetEnqueue -benchtime "${FLEET_BENCHTIME:-2000x}" ./test/cluster/
