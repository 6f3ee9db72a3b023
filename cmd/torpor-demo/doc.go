// Command torpor-demo is the orchestrator behind `make demo`.
// scripts/demo.sh builds it with the three binaries into a temporary
// directory and runs it there; run that instead.
//
// It runs Torpor's real binaries as separate processes on loopback, inside
// one temporary directory: torpor-relay (embedded store and MQTT broker),
// three torpor-agent daemons in different reachability modes (hourly_wake,
// sleep with an operator-scheduled wake, always_on) and torporctl for the
// operator's commands. The sender is the session/sender library that
// torporctl send is built on: it establishes MLS pair sessions through the
// relay and sends Governed Objects, some of them hostile. A principal (a
// farm cooperative) grants the sender a passport for the sleeping agent
// with torporctl passport issue, the agent's owner trusts it in a signed
// policy, and the sender presents it with two payments: one within the
// cap runs unsupervised at the agent's wake, one over it is held for the
// owner (delegate.go, docs/envelope.md).
//
// The orchestrator knows what happens only from what an operator could
// see: the daemons' structured logs (slog's text format, parsed by
// test/procs), the relay's Prometheus metrics, the answers the sender gets,
// the deliveries an application receives on its Unix socket and the
// replies of MQTT commands. It narrates those as they happen and ends with
// a summary table; it fails when an expected event did not happen, so the
// integration test in test/demo can rely on its exit status. What it shares
// with the QEMU tests (running a binary as a child process and following
// its log, the application's socket, reading /metrics) is package
// test/procs.
//
// # Fleet
//
// With Config.Cluster (TORPOR_DEMO_CLUSTER=1 make demo) the same story
// runs on three torpor-relay processes with --store jetstream, on a
// 3-node NATS JetStream cluster embedded in the orchestrator
// (store/jsstore/jsserver) with its files in the temporary directory, behind
// a balancer that sends device links and the sender's requests round robin
// over the relays (cluster.go). The narration names the relay each link
// came up on and the relay that answered each request.
//
// # Update
//
// With Config.Update (TORPOR_DEMO_UPDATE=1 make demo) the demo tells
// another story, the rollout of one agent build (update.go,
// docs/updates.md): the owner's TUF publish, an agent of build 1.0.0 under
// the slot launcher, a rollout that offers it build 2.0.0, its install,
// restart, trial boot and proof, and the rollout's status; at ×600.
//
// # Time
//
// Every process runs on a scaled clock (--time-scale): at the default
// factor of 180 an hour passes in 20 s, so an hourly_wake agent sleeps,
// wakes in its window, drains, sleeps again and wakes at its next window
// within the demo's budget of under a minute. The scaled clocks of separate
// processes agree only as closely as the processes started together: the
// relays start first and the token signers (agents, sender) after them, so
// that their clocks lag the relays' a little and never lead them.
package main
