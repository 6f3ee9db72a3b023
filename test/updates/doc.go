// Package updates holds the agent-update integration tests (build tag
// integration, make test-updates), with real binaries on loopback:
//
//   - the update check: the real torporctl, torpor-relay and torpor-agent.
//     The owner's key ceremony and a publish go through torporctl to the
//     relay's repository; agents fetch the target over their link, check
//     it with runtime/update/tuf and report the outcome; two relays on one NATS
//     JetStream server serve one repository; a relay's repository changed
//     while it is stopped serves a freeze, targets of another snapshot
//     (mix-and-match) and a blob longer than its target, which agents
//     refuse;
//   - the install: two builds of torpor-agent with different version
//     stamps, a build that exits at start and one that hangs, installed
//     into the A/B slots (runtime/update/slots) and started through the
//     slot launcher the systemd unit runs, with a real relay; and SIGKILLs
//     at random points of the switch;
//   - the operating-system hand-off: runtime/update/rauc against Debian's
//     rauc, with file-backed raw slots, a custom bootloader backend, a
//     keyring made with openssl and the rauc service on a private D-Bus
//     bus (root: rauc mounts bundles on loop devices); and a bundle that
//     needs the owner's confirmation through the real torporctl,
//     torpor-relay and torpor-agent, held until torporctl device confirm.
//   - the rollout: torporctl starts a rollout of the v2 build on a relay
//     on the compressed clock, and an awake and a sleeping agent of the
//     v1 build under the slot launcher take the offer, install it, restart
//     into it for its trial boot and are counted installed; a build that
//     exits at start is rolled back and counted so; an offer that comes
//     while another build is on trial waits for the trial (pending, not
//     refused) and is installed after it.
//
// docs/updates.md describes what they show.
package updates
