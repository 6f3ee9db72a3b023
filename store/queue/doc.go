// Package queue is the relay's bounded, durable store-and-forward queue: the
// requests that reached a sleeping agent, kept opaque (the relay never
// decrypts) until the agent's device drains and acknowledges them. It
// implements the Store-and-Forward and Backpressure sections of the A2A
// offline store-and-forward profile.
//
// # Interface
//
// Store is deliberately small (Enqueue, Next, Ack, Purge, Stats) so that a
// distributed backend can implement it: store/jsstore keeps it in NATS
// JetStream for a fleet of relays, with each agent's queue state changed
// by compare-and-swap and checked with Admit, the rule Bolt applies.
// Bolt is the embedded default. The contract suite every backend runs is
// store/queue/queuetest.
//
// # Bounds
//
// Enqueue checks the bounds and writes the record in one bbolt transaction,
// so two concurrent senders can never both take the last slot. The checks
// run over live (unexpired) records in the reference's order — messages,
// then peer, then bytes — and the first that fails is reported in
// *FullError. Bytes are the raw body bytes. Records are counted in per-agent
// counters kept in the same transaction as the records, so a check is O(1),
// not a scan. Expired records leave the counters through purge-before-check:
// every Enqueue transaction first deletes the records whose expiry has
// passed (found through the expiry index, so the cost is proportional to
// what expired), and then the counters hold exactly the live records.
// Read-only calls (Stats, Next) never write: Stats subtracts the agent's
// expired-but-not-yet-purged records found through the same index, Next
// skips them.
//
// # Handshake reserve
//
// MLS Welcome and Commit records (KindHandshake) must not be lost to a full
// queue: a sleeping member that misses a Commit can no longer follow its
// group's epochs (RFC 9420, Section 12.4) and must be re-added. They count
// against the ordinary limits like every record, but a handshake record is
// also accepted beyond them, up to MaxMessages+HandshakeMessages records,
// MaxPerPeer+HandshakeMessages records and MaxPeerBytes+HandshakeBytes
// bytes from its sender, and MaxBytes+HandshakeBytes bytes. Ordinary messages can therefore never eat
// the reserve. The reserve is itself bounded (default 16 records, 256 KiB),
// so a flood of handshakes is refused like any other; the sender is told
// (queued false) and nothing it was told is queued is ever dropped.
//
// # Durability and group commit
//
// Enqueue returns only after its transaction committed with fsync. Concurrent
// Enqueue and Ack calls share commits through bbolt's DB.Batch, so N
// concurrent senders cost about one fsync per batch, not one per message.
// Batch may run a function more than once (it re-runs the rest of a batch
// when one function fails), so the functions are idempotent: they write only
// through the transaction and overwrite, never accumulate, their results.
// A refusal (a full bound) is a result, not a failed function, so it does
// not make bbolt re-run the batch. When no other enqueue is in flight,
// Enqueue commits directly with DB.Update and does not wait for the batch
// timer. A context is checked before a call starts; a commit that has
// started is never abandoned: the caller learns its outcome.
//
// Purge-before-check deletes every expired record, of any agent, in the
// transaction that finds it. The relay also calls Purge periodically and at
// start, so an enqueue normally finds little to delete and a mass expiry
// (a relay that was down for a week) is not paid by one sender.
//
// # On-disk layout (version 1)
//
//	bucket "meta"
//	    "version"    -> 0x01
//	bucket "agents"
//	    bucket <agent DID>
//	        "c"      -> counters: 5 x uint64 big-endian: last seq, live
//	                    records, live bytes, handshake records, handshake
//	                    bytes
//	        bucket "r"   <seq: uint64 BE> -> record
//	        bucket "p"   <peer DID> -> uint64 BE records from that peer
//	bucket "expiry"
//	    <expiresAt: unix ns, int64 BE with the sign bit flipped>
//	    <seq: uint64 BE> <agent DID> -> empty
//
// A record value is one version byte (0x01) followed by the CBOR
// (RFC 8949, fxamacker/cbor) array [from, kind, enqueuedAt, expiresAt,
// body] with times as Unix nanoseconds; agent and seq are not repeated
// because the bucket and key hold them. The version byte lets a later
// layout coexist with records already on flash. Open refuses a file whose
// meta version it does not know (ErrCorrupt).
package queue
