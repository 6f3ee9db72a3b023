// Package faults is the relay's fault suite (build tag integration; make
// test-faults): the real torpor-relay, on both queue engines
// (--queue-engine bolt and log), under the faults a host inflicts on it,
// with a ledger of every message: acknowledged (the sender was answered
// queued: true), delivered (drained and acknowledged by the device), lost
// (acknowledged, never delivered) and duplicated (delivered twice). A
// silent loss fails the test: one the relay neither refused to start over
// nor logged. The faults:
//
//   - TestKillUnderLoad: SIGKILL while eight senders enqueue, several
//     times over one data directory;
//   - TestDamage: bytes flipped at many offsets of every store file while
//     the relay is stopped; each start is refused with a message naming
//     the file and the fix, or serves every acknowledged message, or
//     logs what it withheld or cut;
//   - TestLostStore: a deleted or emptied store (queue, agents.db,
//     mqtt.db) is refused until --reinitialise;
//   - TestDiskFull: the data directory on a small tmpfs (mounted by the
//     test, as root: without root it skips, and fails when CI=true or
//     TORPOR_REQUIRE_TOOLS=1) fills up; sends are refused, not acknowledged
//     and lost, and succeed again once space returns, without a restart;
//   - TestReadOnlyFileSystem: the data directory on a loop-mounted ext4
//     that the kernel turns read-only under the relay (trigger_fs_error);
//     sends are refused, reads go on, and after fsck and a restart every
//     acknowledged message is delivered;
//   - TestDataDirRemoved: the data directory removed while the relay
//     runs; no send is answered queued: true into the removed files;
//   - TestAgentKilledMidHandOff: the real torpor-agent killed while its
//     handler holds a hand-off, with at-most-once and at-least-once
//     notify: handed over again, or kept as possibly lost, never silently
//     dropped.
//
// The relay runs through test/internal/relaytest (Start, Try, Send,
// Drain); harness_integration_test.go holds the ledger and the fixture.
package faults
