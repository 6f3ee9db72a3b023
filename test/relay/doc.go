// Package relay holds torpor-relay's integration tests (build tag
// integration): the SIGKILL crash test of the real binary under 32
// concurrent senders, and two A2A clients nobody here wrote driven against
// real agents behind it, awake and asleep: @a2a-js/sdk (its Node programs,
// send.mjs and docs/a2a.md's example.mjs, are in test/relay/node) and the
// official Go SDK, github.com/a2aproject/a2a-go, which only this package's
// tests import, so that it never enters a binary. docs/a2a.md shows the
// client examples these tests run.
package relay
