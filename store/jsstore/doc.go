// Package jsstore keeps the relay's state in NATS JetStream, so that many
// relays serve one fleet: Queue is store/queue.Store and Agents is
// store/agents.Store, both over one Conn. The embedded bbolt stores stay
// the default; `torpor-relay --store jetstream` selects these
// (docs/scale-out.md has the deployment and the durability statement).
//
// # Layout
//
//	stream TORPOR_QUEUE_RECORDS  subjects torpor.qrec.<agent>
//	    the agent's queue, as messages on its subject in stream order:
//	    one record message per queued record (the body; headers
//	    Torpor-Seq, Torpor-Kind, Torpor-From, Torpor-Times and Torpor-Op,
//	    the id of the Enqueue call), and markers (header Torpor-Marker;
//	    a version byte (1) and a CBOR array: the last seq handed out and
//	    the seqs of the records that left the queue)
//	                             subjects torpor.qrec.<h(tenant)>.<agent>
//	    the queue of a device of a tenant, moved there from its own
//	    subject by a moved marker (version 2; the array adds the
//	    subject it moved to) when it held no record (place.go)
//	bucket TORPOR_AGENTS         (key-value; see agents.go)
//	bucket TORPOR_SHARED         (key-value with per-key TTLs: spent
//	    tokens, token-bucket limits, secrets shared by the fleet's
//	    relays; see shared.go)
//	object store TORPOR_UPDATES  (stream OBJ_TORPOR_UPDATES)
//	    the update repository's blobs in parts, its head and earlier
//	    metadata under up. keys of TORPOR_AGENTS (store/updaterepo's
//	    Backend; see updates.go; created by Conn.Updates, when the relay
//	    hosts the repository)
//	stream TORPOR_AUDIT          subject torpor.audit
//	    the audit log (store/audit): one JSON record per message, the
//	    stream sequence its Seq; max_msgs is the log's bound, discard old
//	    (created by Conn.Audit, when the relay keeps an audit log)
//
// The names are those of the default Config.Prefix, TORPOR (another
// prefix P gives P_QUEUE_RECORDS, p.qrec.> and so on). <agent> is the
// unpadded base64url encoding of the agent's DID. The stream and the
// bucket are file-backed with the configured replica count and have
// allow_direct off, so that every read is served by the stream leader and
// sees what any relay wrote before it. The previous layout kept each
// agent's queue state in a stream of its own, TORPOR_QUEUE_STATE; Open
// converts such queues to this layout (convert.go).
//
// # One write per enqueue, exact bounds across relays
//
// Every change to an agent's queue appends a message to its subject: an
// Enqueue the record, an Ack or a purge a marker naming the records that
// leave. A message is deleted only after a later marker names it (a
// record) or replaces it (an older marker), so the subject's last stream
// sequence never goes back, and the queue at any instant is the fold of
// its subject's messages up to that sequence: the sequence is the queue's
// version. Each Queue keeps that fold (a view: live records with their
// sizes and senders, the last seq handed out) for the agents it serves.
//
// Enqueue checks the bounds (queue.Admit, the rule Bolt applies) on its
// view and publishes the record with the header
// Nats-Expected-Last-Subject-Sequence set to the view's version: JetStream
// stores it only if that is still the subject's last sequence, and
// answers "wrong last sequence" otherwise. In a cluster the stream leader
// checks before proposing, against its stored state and the proposals in
// flight on the subject, of which it allows one. So the successful writes
// to one agent's queue form a chain, each checked against the whole queue
// it extends: a compare-and-set on the subject. No two enqueues can both
// take the last slot: the second to reach the leader was checked on a
// version that is no longer the last, is refused, brings its view up to
// date (reading the messages after its version from the leader) and
// checks again. A refusal by a bound is given only on a view just brought
// up to date. Seqs come from the same chain (last + 1), so they strictly
// increase and are never reused: a marker carries the last seq handed out
// when the records it names are deleted. When the view is current, which
// it is while no other relay writes to the agent, an Enqueue is that one
// publish; a publish that failed but landed is found by its Torpor-Op when
// the view is brought up to date.
//
// Enqueue is acknowledged only after its publish was acknowledged by
// JetStream: with 3 replicas, stored on a quorum; with 1, fsync'd (Open
// checks the server's sync_interval). Expired records stay on the subject,
// hidden by their expiry time, until Purge names them in a marker.
package jsstore
