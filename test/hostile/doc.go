// Package hostile holds the tests of issue 16 against the real binaries
// on loopback (build tag integration): a hostile sender, a fake device, a
// bad disk or a wrong clock tries to break torpor-relay, torpor-agent or
// torporctl, and each case asserts the clear error it gets AND that
// nothing accepted before was lost or changed.
//
// harness_integration_test.go starts the binaries (test/internal/testenv
// builds them once per test binary), makes DID keys, links fake devices
// and sends A2A requests with DID Bearer tokens. The cases live in one
// file per area: relay_queue_integration_test.go (the queue cannot be
// held hostage, enumeration, JSON-RPC ids, the operator's queue command),
// and the files of the relay's limits and the agent's stores next to it.
// Every case is its own t.Run name.
package hostile
