// Package link holds the device link's hostile integration tests (build
// tag integration): the real torpor-relay and torpor-agent binaries on
// loopback, with a tapping reverse proxy in front of the relay that copies
// (or steals) the agent's link token, and a test that plays the thief. They
// check the controls docs/security.md ("The device link") lists: a link
// token opens one link, only for the holder of the device key; an ack
// deletes only what its link received; the KeyPackage pool takes only
// genuine KeyPackages of the device.
package link
