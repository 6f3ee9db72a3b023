// Package tenants holds the end-to-end test of a hosted relay's tenants
// (docs/tenants.md), behind the integration build tag: the real
// torpor-relay binary with --tenants and --usage-key, two owners' devices
// on their links and on the embedded MQTT broker, senders over HTTP, and
// the real torporctl binary for what owners and operators do (make
// test-tenants), on one relay with bbolt files and on three relays
// sharing a 3-node JetStream cluster (started in the test process, as
// test/cluster's shared-memory test does); a tenant's operator's rollout
// installed by a real agent of the tenant under its slot launcher
// (TestTenantRolloutInstalls); and BenchmarkNoisyNeighbour,
// one tenant's flood beside another's senders (make bench).
package tenants
