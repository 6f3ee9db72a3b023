#!/usr/bin/env bash
# Runs the benchmarks. Figures that the docs compare are measured side by side
# in one run (see docs/performance.md), never asserted by tests.
#
# The side-by-side benchmarks against other stacks (ts-mls under Node) and the
# MQTT command round trip (mosquitto) live under test/ behind the integration
# tag. They need tools that scripts/setup.sh installs; TORPOR_REQUIRE_TOOLS=1
# makes a missing tool a failure rather than a skipped comparison.
#
# BenchmarkEnqueueDurableVsJetStream (store/jsstore) runs store/queue's
# durable enqueue workload on bbolt and on an embedded JetStream side by side;
# the ratio is printed after the first run.
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
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench . -benchmem -benchtime "$bt" ./... | tee "$out"
# Issue 20: the bbolt queue against NATS JetStream (file store, fsync on
# every write), the same workload in one run (store/jsstore
# BenchmarkEnqueueDurableVsJetStream); the goal is bbolt at least 5 times.
echo "bbolt enqueue rate over JetStream's, one run (goal >= 5):"
awk '/^BenchmarkEnqueueDurableVsJetStream\/.*x-bbolt\/js/ {
  name = $1; sub(/^BenchmarkEnqueueDurableVsJetStream\//, "", name); sub(/-[0-9]+$/, "", name)
  for (i = 2; i < NF; i++) if ($(i + 1) == "x-bbolt/js") printf "  %-32s %6.2fx\n", name, $i
}' "$out"
# Issue 20: durable enqueue over the disk's fsync rate, both embedded queue
# engines beside the one-key fsync probe in one run (store/queue
# BenchmarkEnqueueDurable); the goal is x-fsync >= 20 at 64 senders.
echo "durable enqueues per one-key fsync (x-fsync), one run (goal >= 20 at 64 senders):"
awk '/^BenchmarkEnqueueDurable\/senders=.*x-fsync/ {
  name = $1; sub(/^BenchmarkEnqueueDurable\//, "", name); sub(/-[0-9]+$/, "", name)
  for (i = 2; i < NF; i++) if ($(i + 1) == "x-fsync") printf "  %-32s %6.2fx\n", name, $i
}' "$out"
# Issue 27: the fleet console's server time with 10,000 devices in bbolt
# (transport/relay/console BenchmarkFleet10k); the goal is <= 100 ms a page.
echo "fleet console with 10,000 devices, server time and CPU per answer (goal <= 100 ms a page):"
awk '/^BenchmarkFleet10k\// {
  name = $1; sub(/^BenchmarkFleet10k\//, "", name); sub(/-[0-9]+$/, "", name)
  for (i = 2; i < NF; i++) { if ($(i + 1) == "ms/op") ms = $i; if ($(i + 1) == "cpu-ns/op") cpu = $i / 1e6 }
  printf "  %-16s %8.1f ms  %8.1f ms CPU\n", name, ms, cpu
}' "$out"
go test -tags integration -run '^$' -bench . -benchmem -benchtime "$bt" ./test/interop/... ./test/mqtt/...
go test -tags integration -run '^$' -bench FleetEnqueue -benchtime "${FLEET_BENCHTIME:-2000x}" ./test/cluster/
# Issue 29: CPU per durable enqueue of the processes that make it durable
# (relay or publisher, nats-servers), real processes, 64 senders, 1 KiB,
# one run (test/cluster BenchmarkEnqueueCPU): relay on bbolt, on the record
# log, and on JetStream beside the raw JetStream publish, the relay's
# protocol without the relay and the raw publish held to the relay's rate
# (raw-paced) and a bare net/http server making each request durable with
# that one publish (http-floor), these taking turns in 6 rounds; the goal
# is relay on JetStream <= 1.5x the raw publish.
# TORPOR_ENQUEUE_CPU_BASE=<rev> adds that revision's relay as a side,
# TORPOR_ENQUEUE_CPU_BUSY=<µs> a protocol side whose publisher spends that
# much CPU before each publish (docs/scale-out.md).
echo "load average before the enqueue CPU: $(cut -d' ' -f1-3 /proc/loadavg)"
go test -tags integration -run '^$' -bench EnqueueCPU -benchtime "${ENQUEUE_CPU_BENCHTIME:-4000x}" ./test/cluster/ | tee "$out"
echo "CPU per durable enqueue, one run (goal: relay on JetStream <= 1.5x the raw publish, ratio of the rounds' sums):"
awk '/^BenchmarkEnqueueCPU\// {
  name = $1; sub(/^BenchmarkEnqueueCPU\//, "", name); sub(/-[0-9]+$/, "", name)
  if (name ~ /^relay-/) {
    for (i = 2; i < NF; i++) if ($(i + 1) == "server-cpu-µs/op") printf "  %-28s %8.1f µs\n", name, $i
    next
  }
  delete v
  for (i = 2; i < NF; i++) v[$(i + 1)] = $i
  n = split("raw protocol relay http-floor relay-base protocol-busy raw-paced", sides, " ")
  for (k = 1; k <= n; k++) if ((sides[k] "-cpu-µs/op") in v) {
    s = sides[k]
    printf "  %-28s %8.1f µs (own process %6.1f, servers %6.1f) %7.0f/s", name " " s, v[s "-cpu-µs/op"], v[s "-own-µs/op"], v[s "-servers-µs/op"], v[s "-enqueues/s"]
    if ((s "-x-raw") in v) printf "  %5.2fx raw (median of rounds %5.2f)", v[s "-x-raw"], v[s "-x-raw-median"]
    if ((s "-nats-msgs/op") in v) printf "  %s NATS messages per enqueue", v[s "-nats-msgs/op"]
    if ((s "-srv-reads/op") in v) printf "  server reads %.2f, own writes %.2f per enqueue", v[s "-srv-reads/op"], v[s "-own-writes/op"]
    printf "\n"
  }
  if ("relay-x-base" in v) printf "  %-28s %5.2fx relay-base (median of rounds %5.2f)\n", name " relay", v["relay-x-base"], v["relay-x-base-median"]
  if ("relay-x-http-floor" in v) printf "  %-28s %5.2fx http-floor (median of rounds %5.2f)\n", name " relay", v["relay-x-http-floor"], v["relay-x-http-floor-median"]
  if ("relay-x-paced" in v) printf "  %-28s %5.2fx raw-paced (median of rounds %5.2f)\n", name " relay", v["relay-x-paced"], v["relay-x-paced-median"]
  printf "  %-28s load average %s\n", name, v["load-avg"]
}' "$out"
# The real torpor-agent's empty wake against a real torpor-relay: CPU time
# and wall time awake per wake (docs/performance.md, "An empty wake"),
# natively and, for armv6 and arm64, under qemu-user (the emulator's CPU
# time, not a board's). Each run is an hour every 6 s (30 s under QEMU).
# Issue 32: the relay's answer path in CPU per durable answer, each engine
# over the floor (a bare net/http server that group-commits and fsyncs each
# body), real processes, 64 senders, in one run, the three servers taking
# turns in 8 rounds (test/relay BenchmarkAnswerPath); the goal is <= 1.5x.
# The base relays (NAME-base) are d2faa43's, where issue 32 starts, or
# TORPOR_ANSWER_BASE=<rev>'s.
echo "load average before the answer path: $(cut -d' ' -f1-3 /proc/loadavg)"
go test -tags integration -run '^$' -bench AnswerPath -benchtime "${ANSWER_BENCHTIME:-4000x}" ./test/relay/ | tee "$out"
echo "server CPU per durable answer over the floor's, one run (goal <= 1.5):"
awk '/^BenchmarkAnswerPath/ {
  for (i = 2; i < NF; i++) if ($(i + 1) ~ /-cpu-µs\/answer$/) { n = $(i + 1); sub(/-cpu-µs\/answer$/, "", n); v[n] = $i }
}
END {
  for (n in v) if (n != "floor" && v["floor"] > 0) printf "  %-16s %8.1f µs  %5.2fx (floor %.1f µs)\n", n, v[n], v[n] / v["floor"], v["floor"]
}' "$out"
# Issue 26: tenant b's senders at 50 requests a second alone and beside
# tenant a's 64 flooding senders on one hosted relay, real processes, the
# two phases taking turns in 4 rounds, with --tenant-inflight unbounded
# and at its default (test/tenants BenchmarkNoisyNeighbour); the goal is
# b's p99 beside a <= 2x alone.
echo "load average before the noisy neighbour: $(cut -d' ' -f1-3 /proc/loadavg)"
go test -tags integration -run '^$' -bench NoisyNeighbour -benchtime "${NOISY_BENCHTIME:-800x}" ./test/tenants/ | tee "$out"
echo "tenant b's answers alone and beside tenant a's flood, one run (goal: p99 beside a <= 2x alone):"
awk '/^BenchmarkNoisyNeighbour\// {
  name = $1; sub(/^BenchmarkNoisyNeighbour\//, "", name); sub(/-[0-9]+$/, "", name)
  for (i = 2; i < NF; i++) v[$(i + 1)] = $i
  printf "  %-20s b p50/p99 alone %6.1f/%6.1f ms, beside a %6.1f/%6.1f ms: p99 %5.2fx; drain %6.1f -> %6.1f ms\n", name,
    v["b-alone-p50-ms"], v["b-alone-p99-ms"], v["b-beside-a-p50-ms"], v["b-beside-a-p99-ms"], v["p99-x-alone"], v["b-alone-drain-ms"], v["b-beside-a-drain-ms"]
  printf "  %-20s relay alone %7.0f answers/s at %6.1f µs CPU each, beside a %7.0f answers/s at %6.1f µs CPU each\n", "",
    v["alone-answers/s"], v["alone-relay-cpu-µs/answer"], v["beside-a-answers/s"], v["beside-a-relay-cpu-µs/answer"]
}' "$out"
echo "load average after the noisy neighbour: $(cut -d' ' -f1-3 /proc/loadavg)"
# Issue 32: this tree's agent beside the one of d2faa43 (built from git
# history) in one run, in two rounds whose order alternates (base, tree,
# tree, base); the goal halves the CPU and the bytes of an empty wake.
TORPOR_EMPTYWAKE_ROUNDS="${EMPTYWAKE_ROUNDS:-2}" \
	go test -tags integration -run '^$' -bench EmptyWake -benchtime "${EMPTYWAKE_BENCHTIME:-10x}" ./test/link/ | tee "$out"
echo "empty wake, this tree over d2faa43, over the rounds so far (goal <= 0.5):"
awk '/^BenchmarkEmptyWake\/build=.*wake-cpu-ratio/ {
  r = ""
  for (i = 2; i < NF; i++) if ($(i + 1) ~ /-ratio$/) r = r sprintf("  %s %s", $(i + 1), $i)
  print "  " $1 r
}' "$out"
# The floor under it, natively: test/qemu/guest/wakefloor in the agent's
# place (the link, one commit, the state and the window, nothing else).
floor=$(mktemp)
go build -o "$floor" ./test/qemu/guest/wakefloor
echo "the floor of an empty wake natively (compare its wake-cpu-ms/wake with the two builds above):"
TORPOR_EMPTYWAKE_AGENT="$floor" go test -tags integration -run '^$' -bench 'EmptyWake$' -benchtime "${EMPTYWAKE_BENCHTIME:-10x}" ./test/link/
rm -f "$floor"
./scripts/cross.sh >/dev/null
TORPOR_EMPTYWAKE_AGENT="$PWD/bin/armv6/torpor-agent" TORPOR_EMPTYWAKE_EXEC="qemu-arm-static -cpu arm1176" TORPOR_EMPTYWAKE_SCALE=120 \
	go test -tags integration -run '^$' -bench EmptyWake -benchtime 4x ./test/link/
TORPOR_EMPTYWAKE_AGENT="$PWD/bin/arm64/torpor-agent" TORPOR_EMPTYWAKE_EXEC="qemu-aarch64-static -cpu cortex-a53" TORPOR_EMPTYWAKE_SCALE=120 \
	go test -tags integration -run '^$' -bench EmptyWake -benchtime 4x ./test/link/
# The same empty wake with the agent inside the qemu-system-aarch64 guest
# (Debian's arm64 kernel; the armv6 build through its 32-bit compat layer;
# its data on an ext4 virtio-blk disk, and for arm64 on the initramfs beside
# it) and the relay on the host, both 120 times faster from a shared epoch
# (--time-epoch); the CPU figures are the guest kernel's, not the emulator's.
# Each target runs d2faa43's agent (built from git history) and this
# tree's, in two rounds whose order alternates (base, tree, tree, base: the
# load drifts over the minutes a guest takes, and alternating spreads it
# over both builds; the ratios are over the sums, reported by each round's
# second run). Beside the guest's figures, the host's: the CPU time of
# QEMU's vCPU thread over the same wakes (vcpu-wake-ratio), which leaves
# out the times the host descheduled it. Then, once for each arm64 target, the
# floor (test/qemu/guest/wakefloor). About 55 minutes: fourteen guests, each booted
# twice (b.N = 1, then 2).
TORPOR_EMPTYWAKE_ROUNDS="${EMPTYWAKE_VM_ROUNDS:-2}" \
	go test -tags integration -run '^$' -bench EmptyWakeVM -benchtime "${EMPTYWAKE_VM_BENCHTIME:-2x}" -timeout 120m ./test/qemu/ | tee "$out"
echo "empty wake in the arm64 guest, this tree's CPU over d2faa43's, over the rounds so far (goal <= 0.5):"
awk '/^BenchmarkEmptyWakeVM\/.*wake-cpu-ratio/ {
  r = ""
  for (i = 2; i < NF; i++) if ($(i + 1) ~ /^(wake-cpu|cpu|vcpu-wake|vcpu-cycle)-ratio$/) r = r sprintf("  %s %s", $(i + 1), $i)
  print "  " $1 r
}' "$out"
# The floor (test/qemu/guest/wakefloor): only what the link and one commit
# ask of any device, run once per arm64 target after the rounds.
echo "the floor under an empty wake in the arm64 guest: its CPU over d2faa43's (the least any agent on this link could reach), this tree's over the floor's:"
awk '/^BenchmarkEmptyWakeVM\/.*\/floor.*floor-ratio/ {
  r = ""
  for (i = 2; i < NF; i++) if ($(i + 1) ~ /(floor-ratio|x-floor)$/) r = r sprintf("  %s %s", $(i + 1), $i)
  print "  " $1 r
}' "$out"
