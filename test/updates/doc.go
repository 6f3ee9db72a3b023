// Package updates holds the agent-update integration tests (build tag
// integration, `make test-updates`): the real torporctl, torpor-relay
// and torpor-agent binaries on loopback. The owner's key ceremony and a
// publish go through torporctl to the relay's repository; agents fetch
// the target over their link, check it with go-tuf/v2 and report the
// outcome (docs/updates.md).
package updates
