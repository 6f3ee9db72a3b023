// Package cluster holds the scale-out integration tests (build tag
// integration, `make test-cluster`): a 3-node NATS JetStream cluster
// embedded in the test process (store/jsstore/jsserver, file storage in
// temporary directories, loopback) and 3 real torpor-relay processes with
// --store jetstream, one fleet. They race senders for the last slots of
// one device's queue and of one sender's per-peer cap across the relays,
// fetch one pool of KeyPackages through all three, check that tokens,
// KeyPackage budgets and console sessions are one for the fleet (relays
// started at once on an empty cluster), and kill a NATS node
// under load: there the cluster runs as 3 nats-server child processes,
// killed with SIGKILL and started again (docs/scale-out.md). TestHistory
// checks the histories of randomized runs under node kills, relay kills
// and partitions (fault-injecting proxies between relays and servers) with
// porcupine against a model of the device queue (history_model_test.go);
// TestRollingRestart restarts the relays one at a time under load.
package cluster
