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
// Bolt is the embedded default; Log, an append-only record log with its
// index in memory, is the second embedded backend (below). The contract
// suite every backend runs is store/queue/queuetest.
//
// # Bounds
//
// The bounds are transport/a2a/queuebounds.Bounds: the type the relay's
// configuration, the device link and the agent's card carry, so the
// store applies what the relay was given without converting it.
// Bolt checks the bounds and writes the record in one bbolt transaction,
// so two concurrent senders can never both take the last slot (Log: see
// below). The checks
// run over live (unexpired) records in the reference's order — messages,
// then peer, then bytes — and then the per-peer byte cap (MaxPeerBytes,
// which the reference lacks; a peer bound), and the first that fails is
// reported in *FullError. Bytes are the raw body bytes. Records are counted in per-agent
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
// Enqueue and Ack calls share commits (group commit), so N concurrent
// senders cost about one fsync per batch, not one per message. A call that
// finds no commit in progress commits at once; calls that arrive during a
// commit go together in the next one, without a timer (bbolt's DB.Batch
// waits MaxBatchDelay even when company is already there). A batch in
// which one function fails is re-run without it, so the functions may run
// more than once and are idempotent: they write only through the
// transaction and overwrite, never accumulate, their results. A refusal (a
// full bound) is a result, not a failed function, so it does not re-run
// the batch. A context is checked before a call starts; a commit that has
// started is never abandoned: the caller learns its outcome.
//
// Purge-before-check deletes every expired record, of any agent, in the
// transaction that finds it. The relay also calls Purge periodically and at
// start, so an enqueue normally finds little to delete and a mass expiry
// (a relay that was down for a week) is not paid by one sender.
//
// # On-disk layout (version 2)
//
//	bucket "meta"
//	    "version"    -> 0x01
//	bucket "agents"
//	    bucket <agent DID>
//	        "c"      -> counters: 5 x uint64 big-endian: last seq, live
//	                    records, live bytes, handshake records, handshake
//	                    bytes
//	        bucket "r"   <seq: uint64 BE> -> record
//	        bucket "p"   <peer DID> -> uint64 BE records from that peer,
//	                     uint64 BE their body bytes
//	bucket "expiry"
//	    <expiresAt: unix ns, int64 BE with the sign bit flipped>
//	    <seq: uint64 BE> <agent DID> -> empty
//
// A record value is one version byte (0x02), the CRC-32C (Castagnoli,
// big-endian) of the seq (uint64 BE), the agent DID and the CBOR bytes,
// then the CBOR (RFC 8949, fxamacker/cbor) array [from, kind, enqueuedAt,
// expiresAt, body] with times as Unix nanoseconds; agent and seq are not
// repeated because the bucket and key hold them. Records written before
// the checksum (version byte 0x01, the CBOR array alone) are still read.
// Next leaves a record that fails its checksum out (a *DamagedError names
// it; the relay logs and counts it and lists it to the operator); it can
// still be acknowledged or purged. AckCount says how many records an
// acknowledgement deleted, so that the relay can tell one that deleted
// nothing. Open refuses a file whose
// meta version it does not know (ErrCorrupt). Version 1 differed only in
// the peer values (the record count alone); Open migrates such a file in
// one transaction, recomputing the peer values from the records. The
// records bucket is filled to 100% (bbolt's FillPercent): seqs only grow,
// so its pages are appended to, never split in the middle.
//
// # Record log
//
// Log (OpenLog) keeps the same records in an append-only log of segment
// files in one directory, for a relay whose disk syncs a small sequential
// append much faster than bbolt's scattered copy-on-write pages
// (docs/performance.md, "Durable enqueue"). The mechanics (frames,
// segments, appends and syncs, reading a segment at open, compaction's
// choices, the import) are package store/queue/recordlog; Log is the
// Store over them: its index, its commits and its frames' payloads. What
// it chose:
//
//   - Frames: length (uint32), CRC-32C of the length and the rest, type, then
//     the fields (recordlog; the payloads are logframe.go's). Record frames hold agent, seq, sender, kind,
//     both times and the body; acknowledgements, purges and expiries write
//     tombstone frames (agent and seqs). Every segment starts with a magic
//     and the last assigned seq of every agent, so seqs are never reused
//     when the segments that held an agent's records are gone.
//   - Group commit (internal/groupcommit, which Bolt uses too; no timer):
//     the calls of one commit run under the index lock, each checking the
//     bounds against the index and changing it as the same step, and append
//     their frames to one buffer; the commit writes it with one write and
//     one fdatasync before any of its callers returns. The next batch is
//     taken when the commit before it has finished (LogOptions.OverlapSyncs
//     lets two be in flight instead, the next built and written while the
//     previous one syncs); commits finish in order. Next and Stats do not
//     show a commit's records until it is finished. A failed write or sync
//     fails its callers and the commits in flight after it, and they are
//     taken back in the index and in the file (overwritten with zeros, or
//     cut), so that a record whose sender heard "not stored" is never
//     served, not even after a restart; the Log then goes on. Only when
//     that rollback fails does it refuse writes until it is opened again;
//     reads go on. When the file system is full the log keeps the room
//     left (64 KiB) for tombstones: Enqueue fails with ErrNoSpace
//     (ENOSPC; the relay answers 503 store_unavailable), while Next, Stats
//     and Ack go on, and each commit tries again to write zeros ahead, so
//     Enqueue works again by itself once there is space. A segment is deleted only once the tombstones that
//     emptied it are synced.
//   - The log writes zeros ahead of its last frame (LogOptions.ZeroAhead), so
//     most commits overwrite zeros and their fdatasync has no file size to
//     journal.
//   - The index is in memory: per agent a slice of fixed-size 40-byte
//     entries in seq order (segment, offset and length of the frame, body
//     length, kind, sender as a number into a table of interned sender
//     names, expiry), the counters and the per-sender counts and bytes; a
//     heap of the agents by their earliest expiry. Bounds are exactly
//     Bolt's (the same check function; expired records are purged, with
//     tombstones, before each check); Stats and Next scan one agent's
//     live records. Next reads the bodies from the segment files. Memory is
//     about 45 bytes of heap per live record after open (BenchmarkLogOpen,
//     TestLogMemoryPerRecord holds it at 64 or less).
//   - Every commit ends with a commit frame (the length and CRC-32C of the
//     commit's bytes; recordlog, segment format version 2). Open checks
//     every frame of every segment and applies whole commits only. What
//     follows the last whole commit of the last segment is a torn tail,
//     cut (a copy kept, and Log.TornTails says what, for the relay to log)
//     when no commit frame follows it and it shows a torn write: cut short
//     by the end of the file, or a sector of zeros (etcd's WAL tells torn
//     writes the same way). Anything else is damage: a bad frame followed
//     by a commit, any byte of an acknowledged commit, a damaged header,
//     any problem in a segment but the last. OpenLog then refuses with a
//     *recordlog.DamageError (a *store.CorruptError too) naming the file
//     and the offset, and changes nothing. A last segment whose header is
//     missing, cut, or followed only by zeros lost its first commit (the
//     header is written and synced with the first frames) and starts
//     again empty. Segments of format version 1 (before commit frames)
//     are read frame by frame; appends go to a new segment.
//   - The index checkpoint (index.checkpoint, written with
//     internal/atomicfile, with a CRC-32C): the index as the commits up to
//     a position made it, written in the background after a commit that
//     starts a segment (and moves records forward) when no commit follows
//     it in flight, and at Close. OpenLog installs it and decodes only the
//     frames after its position; it still reads every segment and checks
//     every frame's CRC and every commit frame, so damage is refused as
//     without it. It is a cache: one that is damaged, or does not match
//     the segments (a segment it covers rewritten, the log cut before its
//     position, a record it holds in a segment deleted since), is ignored
//     and the frames are decoded (Log.CheckpointIgnored says why; the
//     relay logs it). RepairLog removes it.
//   - Space: the oldest segments are deleted while they hold no live record
//     (only a prefix: a later segment may hold an earlier one's tombstones).
//     When a new segment starts, the live records of the oldest segments
//     that are at least three quarters dead are copied into it (same
//     frames; replay takes the later copy) so that they can go too.
//   - OpenLog with LogOptions.ImportBolt imports a bbolt queue file once:
//     into a new directory renamed into place, then the file is renamed
//     to *.imported. A bbolt file beside a log not imported from it is
//     refused. torpor-relay --queue-engine log (the default) does this with
//     queue.db. ExportBolt is the way back: it writes a new bbolt file from
//     a log (records, seqs, every agent's last seq). OpenDir opens whichever
//     engine a relay's data directory holds.
//
// One process opens a directory at a time (a flock on LOCK, on Linux).
package queue
