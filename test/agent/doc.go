// Package agent holds the agent's integration tests (build tag
// integration): crash tests that kill the agent with SIGKILL at chosen or
// random points and check, after a restart, what the idempotency ledger,
// the replay cache and the relay's queue say; and end-to-end runs against
// a real relay.
//
// The processes under test are this package's test binary re-executed in
// a child role (the agent's drain over the relay's real queue store, or an
// application effect), so the tests need nothing but the Go toolchain.
package agent
