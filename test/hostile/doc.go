// Package hostile holds the hostile-input tests against the real binaries
// on loopback (build tag integration): a hostile sender, a fake device, a
// bad disk or a wrong clock tries to break torpor-relay, torpor-agent or
// torporctl, and each case asserts the clear error it gets AND that
// nothing accepted before was lost or changed.
//
// harness_integration_test.go starts the binaries (test/internal/testenv
// builds them once per test binary): startRelay and startAgent, key and
// freshKey for DID keys, publish and pullAll for a fake device on the
// link, send for an A2A request with a DID Bearer token, newSleeper for a
// sleeping device that already holds accepted messages (kept checks they
// are all still there, unchanged), ctl for torporctl. The cases live in
// one file per area: relay_queue_integration_test.go (the queue cannot be
// held hostage, enumeration, JSON-RPC ids), operator_queue_integration_test.go
// (torporctl queue), and the files of the relay's limits and the agent's
// stores next to them. Every case is its own t.Run name.
package hostile
