// Package updates holds the integration tests of the agent's updates
// against real binaries (build tag integration; make test-updates): two
// builds of torpor-agent with different version stamps, a build that
// exits at start and one that hangs, installed into the A/B slots
// (runtime/update/slots) and started through the slot launcher the
// systemd unit runs, with a real relay; and SIGKILLs at random points of
// the switch. docs/updates.md describes what they show.
package updates
