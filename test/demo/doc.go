// Package demo tests `make demo` as a new user runs it: the integration
// test runs the make target with an empty HOME and a private TMPDIR, and
// checks that it exits 0 within the minute, that every event the
// demo must show appears in its output (the 503 with its Retry-After,
// queue depths, each wake and its reason, the drain, accepted and rejected
// objects with their causes, the held action and its confirmation over
// MQTT, an action delegated under an Autonomy Envelope that runs and one
// over its cap that is held, the next sleep, the summary), that no process it started is left
// running and that nothing is left outside its temporary directory. Its
// sibling runs TORPOR_DEMO_CLUSTER=1 make demo, the same story on three
// relays over a 3-node NATS JetStream cluster, with the same checks and
// the fleet's own events; another runs TORPOR_DEMO_UPDATE=1 make demo,
// the story of one agent update rollout, with its own events.
package demo
