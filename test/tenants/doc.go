// Package tenants holds the end-to-end test of a hosted relay's tenants
// (docs/tenants.md), behind the integration build tag: the real
// torpor-relay binary with --tenants and --usage-key, two owners' devices
// on their links and on the embedded MQTT broker, senders over HTTP, and
// the real torporctl binary for what owners and operators do (make
// test-tenants); and BenchmarkNoisyNeighbour, one tenant's flood beside
// another's senders (make bench).
package tenants
