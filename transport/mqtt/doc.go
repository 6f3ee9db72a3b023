// Package mqtt is the transport of the operators' management channel to
// sleeping devices: MQTT 5 (github.com/eclipse/paho.golang's client, kept
// connected by the subpackage mqttconn) with persistent sessions that hold
// commands while a device sleeps. Client is the device's connection; what a
// command says and the operator's side are the subpackage command's; who
// may send it and how it runs on the device is runtime/manage's, behind
// Handler. docs/mqtt.md documents the topics and every payload.
//
// Its subpackages: mqttconn, the connection manager (dial, CONNECT,
// reconnection, the outbound queue); envelope, the signed objects a device
// publishes (replies, statuses, events, the will) and their payload
// encoding; login, what a client presents at CONNECT; command, the command
// vocabulary and the operator's client; cborjson, CBOR in the
// JSON data model.
//
// # Persistent sessions
//
// The device connects with Clean Start 0 and a Session Expiry Interval
// longer than its longest sleep (MQTT 5.0 Sections 3.1.2.4, 3.1.2.11.2), as
// the client id Config.Name, authenticated by a fresh DID Bearer token
// (login.Authenticate: user name the DID, password the token, Maximum
// Packet Size login.MaxPacketSize), and subscribes again on every connection. The
// broker keeps the subscription and queues the commands published while
// the device sleeps; they arrive at its next wake. The client's half of the
// session (QoS 1 publications not yet acknowledged) and the outbound queue
// live in the agent's bbolt file (store/mqttsession) with explicit sequence
// numbers, not in paho's file stores, which order by file time and reorder
// after a reboot.
//
// # Inbox and backlog
//
// A message is committed to a bbolt inbox before it is acknowledged to the
// broker (several arriving together share one commit): from then on the
// device, not the broker, keeps it, so the broker's flow control (mosquitto
// sends at most 20 unacknowledged messages by default) never stalls a long
// backlog. The broker sends a resumed session's queued messages before
// anything published later, so after subscribing the Client publishes a
// probe with a fresh nonce on its own sync topic and holds the backlog
// until the probe comes back (Config.Timing.BarrierTimeout bounds the wait). It
// then hands the backlog to the Handler sorted: each issuer's messages by
// the sequence number they claim, issuers interleaved by issuance time, so
// a broker that redelivers out of order (mochi sorts a session's queued
// messages by creation second with an unstable sort) does not decide the
// order. Later messages go to the Handler as they come.
//
// The Handler settles each message through its Delivery: Admit marks it
// admitted inside the handler's admission transaction, Complete queues the
// signed reply and forgets the message in the handler's completion
// transaction, Answer publishes at once (rejections). A message admitted
// and not completed when the device stopped is answered at the next Start
// as Handler.Interrupted says; one stored and not admitted is handled with
// the next backlog. Abort drops the connection as a power cut would:
// nothing more is recorded.
//
// # Replies, status, will
//
// Every object the device publishes is a Governed Object signed by its DID,
// so an operator tells a real answer from one the broker made up
// (manage.VerifyReply, envelope.VerifyStatus, envelope.VerifyEvent). A reply goes on the device's
// own reply topic with the command id as correlation data: the command's
// Response Topic is not used, so a command can never make the device
// publish elsewhere. The status topic holds a retained status: awake on
// every connection, asleep with the next wake when the device goes to
// sleep cleanly (Sleep), offline on a clean shutdown (Close). The will is a
// retained status lost, signed when the connection was made: the broker
// publishes it when the connection ends without a DISCONNECT. Close
// publishes stopped. Statuses expire (envelope.SignStatus), and the Verify
// functions refuse what has.
//
// # Time
//
// What concerns the device's schedule runs on Config.Clock: the timestamps
// of statuses and replies. Waits for the network — a PUBACK, a SUBACK, a
// final flush — are bounded on the real clock, because they measure the
// network, not the schedule. The barrier timeout (the probe's round trip)
// runs on clock.Unscaled(Config.Clock): a test's fake clock still drives
// it, a time scale does not shorten it. The reconnection backoff
// (Config.Timing.Backoff) waits on the real clock.
//
// # Encoding
//
// Payloads (package envelope) are JSON unless the MQTT 5 Content Type says application/cbor.
// CBOR payloads are the same Governed Objects in the JSON data model
// (RFC 8949 Sections 6.1 and 6.2, with byte strings, tags and non-finite
// floats refused), so the signature over the RFC 8785 canonical form
// verifies whichever encoding carried the object. A device answers in the
// encoding it was asked in.
package mqtt
