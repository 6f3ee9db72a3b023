// Package mqtt is the operators' management channel to sleeping devices:
// signed commands over MQTT 5 (github.com/eclipse/paho.golang, autopaho),
// persistent sessions that hold commands while a device sleeps, and signed
// replies, statuses and events. Client is the device's side, Operator the
// operator's (torporctl). docs/mqtt.md documents the topics and every
// payload.
//
// # Trust
//
// The broker is a mailbox, not an authority: whoever controls it (or
// anyone, on the embedded broker, which allows anonymous clients) can
// publish anything on any topic. So a command is a Governed Object
// (draft-chapman-a2a-mls-03 Section 5) with purpose torpor:command, signed
// by an operator DID, and the device admits it only if, in order:
//
//  1. it passes the six receiver checks of draft Section 8.1 (structure,
//     signature, sender binding — none, MQTT carries it unencrypted —,
//     expiry, replay against the device's bbolt replay cache, purpose);
//  2. its issuer is in the device's operator allowlist;
//  3. it is a well-formed command (known op, valid arguments, a lifetime
//     within Config.MaxCommandTTL);
//  4. it names this device's DID, so it cannot be redirected to another
//     device;
//  5. its sequence number is greater than the last one the device accepted
//     from that operator (below).
//
// Everything the device publishes (replies, statuses, events, the will) is
// a Governed Object signed by the device's DID, so an operator can tell a
// real answer from one the broker made up.
//
// # Sequence numbers
//
// A command carries a per-operator sequence number. The rule: the device
// rejects, as out-of-sequence, a command whose number is not greater than
// the last one it accepted from the same operator; gaps are allowed (a
// command that expired or was never delivered leaves one). So an older
// command never takes effect after a newer one, whatever order the broker
// delivers them in, and a replayed command is refused even once its id has
// left the replay cache. Operators pick numbers with NextSeq: the issuance
// time in Unix milliseconds, or one more than the last number they used if
// that is not greater. No coordination is needed between operators (each
// has its own sequence) or between machines holding one operator key, as
// long as their clocks are roughly right; torporctl also keeps the last
// number it used per key and device, so a clock that steps back does not
// stall it.
//
// Rejecting late commands alone would make the broker's redelivery order
// decide which commands run: mochi (the embedded broker) resends queued
// messages sorted by creation second with an unstable sort, so two
// commands sent in the same second to a sleeping device arrive in either
// order (8 of 20 runs when we measured it; test/mqtt's
// TestBacklogKeepsSequenceOrder sends such a backlog). The Client therefore holds the backlog a
// connection brings until it knows the backlog is complete, and runs it
// sorted by sequence: after subscribing it publishes a probe with a fresh
// nonce on its own sync topic, and since the broker sends a resumed
// session's queued messages before anything published later, the probe
// coming back marks the end (Config.BarrierTimeout bounds the wait).
//
// # Persistent sessions
//
// The device connects with Clean Start 0 and a Session Expiry Interval
// longer than its longest sleep (MQTT 5.0 Sections 3.1.2.4, 3.1.2.11.2), as
// the client id Config.Name, and re-subscribes on every connection. The
// broker keeps the subscription and queues the commands published while
// the device sleeps; they arrive at its next wake. Commands carry an MQTT
// message expiry equal to their remaining lifetime, so a broker drops what
// the device would refuse as expired anyway (mochi caps expiries at its
// MaximumMessageExpiryInterval; the relay raises it to 30 days).
//
// The client's half of the session (QoS 1 publications not yet
// acknowledged) and the outbound queue (replies not yet handed to the
// broker) live in the agent's bbolt file (store/mqttsession) with explicit
// sequence numbers, not in paho's file stores, which order by file time
// and reorder after a reboot.
//
// # Exactly what runs
//
// A command is committed to a bbolt inbox before it is acknowledged to the
// broker (several arriving together share one commit): from then on the
// device, not the broker, keeps it, so the broker's flow control (mosquitto
// sends at most 20 unacknowledged messages by default) never stalls a long
// backlog behind the end-of-backlog probe. Admission (the checks above,
// the replay entry, the new sequence number, a reservation in the
// idempotency ledger, store/ledger, and the inbox entry marked admitted)
// commits in one bbolt transaction; Device.Execute runs; then the ledger
// completion, the signed reply queued for publication and the inbox
// entry's removal commit in a second one. A crash before the second
// commit leaves the ledger key reserved, which reads indeterminate after
// the restart, and the admitted inbox entry makes the restarted client
// answer "indeterminate" with the key an operator reconciles, without
// running the command again (the Autonomy Envelope's rule: no automatic
// retry of an effect that may have happened). Entries stored and not yet
// admitted run with the next backlog. A message the broker delivers twice
// (an acknowledgement lost with its connection) is answered as a replay,
// with the original outcome in the detail.
//
// Commands run one at a time in admission order, except halt, which runs
// at once, concurrently with a command in progress, so that it reaches
// work in flight (the owner's explicit halt is immediate).
//
// # Replies, status, will
//
// Every admitted command is answered on the reply topic with its id (also
// as MQTT correlation data) and outcome: ok, failed (with a reason such as
// unsupported), rejected (with the reason: a receiver-check reason such as
// expired or replay, or operator-not-allowed, wrong-device,
// out-of-sequence, bad-command, unsupported-content-type) or
// indeterminate. The command's Response Topic is not used: a command can
// never make the device publish elsewhere. Rejections are answered within
// Config.RejectionsPerMinute, so a flood of junk costs bounded signing and
// radio time; the rest are counted (Stats). The device reveals rejection
// reasons because the reply topic is the operators' diagnostic channel and
// the reasons concern the command, not the device's secrets.
//
// The status topic holds a retained status: awake on every connection,
// asleep with the next wake when the device goes to sleep cleanly (Sleep),
// offline on a clean shutdown. The will is a retained status lost, signed
// when the connection was made: the broker publishes it when the
// connection ends without a DISCONNECT.
//
// # Time
//
// What concerns the device's schedule runs on Config.Clock: command expiry
// (the wall clock at the device decides), the rejection rate, the
// timestamps of statuses and replies. Waits for the network — a PUBACK, a
// SUBACK, a final flush — are bounded on the real clock, because they
// measure the network, not the schedule: a scaled demonstration clock or a
// test's fake clock must not make them fire early or never. The barrier
// timeout (the end-of-backlog probe's round trip) runs on
// clock.Unscaled(Config.Clock): a test's fake clock still drives it, a
// time scale does not shorten it. autopaho's reconnection backoff (Config.Backoff) also waits on
// the real clock.
//
// # Encoding
//
// Payloads are JSON unless the MQTT 5 Content Type says application/cbor.
// CBOR payloads are the same Governed Objects in the JSON data model
// (RFC 8949 Section 6.1 and 6.2, with byte strings, tags and non-finite
// floats refused), so the signature over the RFC 8785 canonical form
// verifies whichever encoding carried the object. A device answers in the
// encoding it was asked in.
package mqtt
