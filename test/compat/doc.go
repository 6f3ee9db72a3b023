// Package compat proves that a release works with the previous one, device
// with relay, in both directions: the previous release's agent against this
// tree's relay, and this tree's agent against the previous release's relay.
//
// The previous release is a commit pinned in test/internal/testenv
// (PreviousRelease) and built from git history; each release moves the
// pin forward to the commit it follows. The story run across the two versions is the previous
// release's own `make demo` (cmd/torpor-demo built at the pinned commit),
// so the scenario is fixed by the older side: sleeping agents, the relay's
// 503 answers and queue, MLS handshakes, the drain, rejections, a held
// action confirmed by the owner over MQTT, signed replies. docs/upgrades.md
// states what is compatible with what.
//
// Its tests carry the integration build tag (make test-integration).
package compat
