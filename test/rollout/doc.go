// Package rollout holds the integration tests of update rollouts (build
// tag integration, `make test-rollout`, part of test-integration): real
// torpor-relay binaries, on bbolt files and on a NATS JetStream server,
// driven by the real torporctl, with devices that link, learn the offered
// target in their state-ok and report their install's outcome in their
// signed status (docs/updates.md, "Rollouts").
package rollout
