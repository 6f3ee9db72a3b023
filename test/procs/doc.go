// Package procs runs Torpor's real binaries as child processes and reads
// what an operator could see of them: each daemon's structured log
// (log/slog's text format, parsed by ParseLine and followed line by line
// with Log), the deliveries its application receives on a Unix socket
// (Sink, the other end of runtime/deliver.Unix) and the relay's
// Prometheus gauges (QueueDepths).
//
// The demo (cmd/torpor-demo) and the QEMU tests (test/qemu) drive the
// binaries with it; runtime's log test checks with ParseLine that every
// line the agent writes is one the demo can read. It is test tooling: no
// shipped binary links it (internal/deptest, the layer table's top row).
package procs
