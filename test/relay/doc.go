// Package relay holds torpor-relay's integration tests (build tag
// integration): the SIGKILL crash test of the real binary under 32
// concurrent senders, and the @a2a-js/sdk client driven against a sleeping
// agent (its Node program is in test/relay/node).
package relay
