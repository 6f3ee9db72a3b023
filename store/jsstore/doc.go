// Package jsstore keeps the relay's state in NATS JetStream, so that many
// relays serve one fleet: Queue is store/queue.Store and Agents is
// store/agents.Store, both over one Conn. The embedded bbolt stores stay
// the default; `torpor-relay --store jetstream` selects these
// (docs/scale-out.md has the deployment and the durability statement).
//
// # Layout
//
//	stream TORPOR_QUEUE_STATE    subjects torpor.qstate.<agent>
//	    one message per agent (max_msgs_per_subject 1): the agent's queue
//	    state, a version byte (1) and a CBOR array: the agent's DID, the
//	    last seq handed out, and one entry per live record (seq, stream
//	    sequence of its body, size, kind, sender, enqueued and expiry
//	    times)
//	stream TORPOR_QUEUE_RECORDS  subjects torpor.qrec.<agent>
//	    one message per record body, with a per-message TTL (Nats-TTL) of
//	    the record's TTL plus TTLGrace (allow_msg_ttl; nats-server 2.11 or
//	    later)
//	bucket TORPOR_AGENTS         (key-value; see agents.go)
//	bucket TORPOR_SHARED         (key-value with per-key TTLs: spent
//	    tokens, token-bucket limits, secrets shared by the fleet's
//	    relays; see shared.go)
//	stream TORPOR_AUDIT          subject torpor.audit
//	    the audit log (store/audit): one JSON record per message, the
//	    stream sequence its Seq; max_msgs is the log's bound, discard old
//	    (created by Conn.Audit, when the relay keeps an audit log)
//
// The names are those of the default Config.Prefix, TORPOR (another
// prefix P gives P_QUEUE_STATE, p.qstate.> and so on). <agent> is the
// unpadded base64url encoding of the agent's DID. The
// streams and the bucket are file-backed with the configured replica
// count and have allow_direct off, so that every read is served by the
// stream leader and sees what any relay wrote before it.
//
// # Exact bounds across relays
//
// An agent's queue is its state message. Every change to it (Enqueue, Ack,
// expiry) reads the state with its stream sequence R, computes the new
// state and publishes it with the header Nats-Expected-Last-Subject-Sequence
// R: JetStream stores the message only if R is still the last sequence on
// the subject, and answers "wrong last sequence" otherwise, after which the
// caller reads again and recomputes. In a cluster the stream leader checks
// before proposing, against its stored state and the proposals in flight
// on the subject, of which it allows one; so the successful writes of one
// agent's state form a chain, each computed from the one before it. Enqueue checks the
// bounds (queue.Admit, the rule Bolt applies) against the state it
// replaces, so no two enqueues can both take the last slot: the second one
// to reach the leader was computed from a state that is no longer the
// last, is refused by the leader and checks again against the state that
// holds the first record. Seqs come from the same chain (last + 1), so
// they strictly increase and are never reused.
//
// Enqueue publishes the body before the state: the record exists once the
// state names it, and then its body is already stored. A body whose state
// write lost (a bound refused it on the retry) is deleted; one whose
// enqueue failed in between is named by no state and disappears with its
// TTL. A state entry whose body is gone (a failure made Enqueue delete a
// body whose state write had landed after all) is skipped and dropped by
// Next. Acknowledged and expired records leave the state first and their
// bodies are deleted after.
//
// Enqueue is acknowledged only after both publishes were acknowledged by
// JetStream: with 3 replicas, stored on a quorum; with 1, fsync'd (Open
// checks the server's sync_interval).
package jsstore
