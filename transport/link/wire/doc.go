// Package wire is the device link's protocol: the frames a device and its
// relay exchange over the link's WebSocket and the types they carry (the
// device's published State, queued Records, live Requests and Responses,
// KeyPackageDigest; queue bounds are transport/a2a/queuebounds.Bounds,
// the type the relay's store applies). It is a leaf: it imports nothing of the
// relay or of the agent's runtime, so that package session can name
// KeyPackages as the link does and the device-side client
// (transport/link) links neither the relay nor its queue store. The
// relay's side of the link is transport/link/server.
//
// # Why WebSocket
//
// The link is a WebSocket (RFC 6455) to the relay's /link endpoint: the
// relay serves it with github.com/coder/websocket, the device dials it
// with a client of Torpor's own (transport/link/internal/wsclient), so
// that torpor-agent links no net/http. The alternatives were HTTP
// long-poll and MQTT 5 request/response (the relay embeds an MQTT broker
// anyway):
//
//   - Both directions on one connection. Draining is device→relay
//     (pull, ack); live requests are relay→device and must reach the device
//     within the sender's HTTP request. A WebSocket carries both with one
//     TCP+TLS handshake and one NAT mapping. Long-poll needs a parked GET for
//     relay→device plus a POST per drain batch and per answer: a new request
//     (and on cellular often a new connection) for each, with head-of-line
//     waits when the parked poll has just returned.
//   - Authentication is a DID Bearer token once, on the upgrade request,
//     in the format every other caller of the relay uses (with the link's
//     purpose), and then one signature over the relay's challenge (see
//     Handshake), for the life of the connection. MQTT would
//     need a second identity scheme (username/password or client
//     certificates bound to the DID) and ACLs per topic so that a device can
//     only read its own queue.
//   - Delivery semantics are ours, in one place. The relay deletes a record
//     only when the device's ack frame arrives, after the device's own
//     transaction committed; an MQTT broker adds its own QoS retransmission
//     and session queue on top, and mochi's redelivery order is not stable
//     (transport/broker: 8 of 20 runs out of order after a restart), so
//     order would have to be rebuilt from sequence numbers anyway. A second
//     durable copy of every record in the broker's session would also
//     double the flash and disk writes.
//   - It works through every HTTP proxy and load balancer that the relay's
//     HTTPS endpoint already works through, on port 443.
//
// MQTT stays the operator's command channel (the broker the relay hosts);
// the link carries only the traffic whose answers someone is waiting for.
// BenchmarkDrain and BenchmarkLiveRoundTrip (transport/link/server)
// measure the link over loopback.
//
// # Frames
//
// Every WebSocket message is one binary frame, a CBOR map (RFC 8949,
// fxamacker/cbor) with a protocol version "v" (Version, now 2) and a type
// "t". The WebSocket subprotocol is "torpor-link.v2"; a relay that does not
// speak the device's version refuses the upgrade (a version 1 device gets
// 400 {"error":"link_version"} saying to upgrade torpor-agent). Frames:
//
//	relay → device  challenge {challenge}           first frame: nonce, origin, time
//	device → relay  proof    {proof}                the device key's signature
//	relay → device  hello    {bounds, empty}        after a valid proof: the relay's
//	                                                ceiling bounds for this agent, and
//	                                                whether its queue held nothing
//	device → relay  state    {id, state}            publish mode, window, card, ...
//	relay → device  state-ok {id, bounds, held,     the bounds now in force, the KeyPackages held,
//	                          wakeSecond, offer,    the wake second the relay assigned, the
//	                                                update a rollout offers (offer.go),
//	                          cardDigest}           the SHA-256 of the card it holds
//	device → relay  pull     {id, after, max}       up to max records with seq > after
//	relay → device  records  {id, records, more}    in seq order
//	device → relay  ack      {id, seqs}             delete these (device committed)
//	relay → device  acked    {id}                   the deletion committed
//	relay → device  request  {id, req}              a live A2A request
//	device → relay  response {id, resp}             its answer
//	relay → device  queued   {seq}                  a record was queued meanwhile
//	device → relay  update   {id, upd}              a TUF metadata file, a range of
//	                                                a target's blob, or a fresh timestamp
//	relay → device  update-data {id, data}          its bytes (update.go)
//	either          error    {id, code, msg}        the frame with id failed
//
// Ids are chosen by the side that asks; each side numbers its own requests,
// so the two id spaces never meet (a response answers the relay's request
// id, a state-ok the device's state id).
//
// Members added within a version are optional, and a peer ignores those
// it does not know, so both sides may be upgraded in any order. Added so
// far: state.lastResort (the last-resort KeyPackage, RFC 9420 Section
// 16.8), held.lastResort (the digest of the one the relay holds),
// state.replaceKeyPackages (the KeyPackages replace the pool) and
// state.status (the device's signed status for the operators' fleet
// console: status.go), state-ok.wakeSecond (the second of its wake
// minute the relay assigned the device's window: Accepted.WakeSecond) and
// state.enrolment (the owner's enrolment of the device, which a relay
// that trusts the owner admits at once). The update and update-data
// frames came later: a relay that predates them answers an error frame
// "unknown-frame", which the device reports as a failed fetch. So did
// state-ok.offer (the update target a rollout of the relay asks the
// device to install: Accepted.Offer), state-ok.cardDigest (the
// CardDigest of the card the relay holds: Accepted.CardDigest; the device
// leaves its card out of later states while it is named, and sends it
// once a wake to a relay that names none) and state.heldDigest (the
// HeldDigest of the Held the device knows, which the relay then leaves
// out of the state-ok when it holds the same KeyPackages).
//
// # Handshake
//
// Version 2 binds the link to the device key, not only to a bearer token
// (docs/security.md, "The device link"):
//
//  1. The upgrade request carries a link token (transport/bearer
//     IssueLink: the reference's token format with "purpose":"torpor-link"
//     and a random "jti"). The relay refuses a token without that purpose
//     (an A2A token) and one it accepted before (401,
//     error_description "transport token: link token already used").
//  2. The relay sends a challenge: NonceSize fresh random bytes, its
//     origin, and the time it accepted the connection.
//  3. The device checks that the origin is the one it dialled and sends a
//     proof: the Ed25519 signature (RFC 8032) of ProofMessage, which is
//     ProofContext (domain separation) followed by the RFC 8785 canonical
//     JSON of the DID, the nonce, the origin, the time and the SHA-256 of
//     the token.
//  4. The relay verifies it under the key inside the token's DID. Only
//     then does the connection become the agent's link (replacing an older
//     one) and get the hello. A wrong or missing proof gets an error frame
//     "bad-proof" and the connection is closed (policy violation); the
//     agent's link, if any, is untouched.
//
// # Delivery
//
// The relay deletes only acknowledged records. Records sent but not
// acknowledged when the link drops are delivered again on the next link,
// because the device starts each link with a cursor of 0 (it pulls "after
// 0"); the device's replay cache makes the repeat harmless (the offline
// profile's Delivery Semantics: at-least-once storage, idempotent receiver).
// Within one link the device advances its cursor to the last seq it
// received, so it never receives a record twice on the same link. An ack
// may name only records delivered on its own link and not acknowledged
// yet; otherwise the relay answers an error frame "ack-not-delivered" and
// deletes nothing of that ack.
//
// # Liveness
//
// The relay pings every PingInterval (coder/websocket control frames) and
// drops a link whose pong does not come back within the same interval, so a
// device that lost power without closing its socket stops counting as
// reachable. A device may ask for fewer pings in its upgrade request's
// PingHeader, up to one every MaxPingInterval: every ping wakes an idle
// device to answer it: ten times in a five-minute window at PingInterval,
// six at MaxPingInterval.
// The device reads the link as dead after two intervals and 15 s without a
// frame (transport/link's Config.PingInterval), so asking for fewer pings
// makes a link that died without closing take longer to find, on both
// sides. Reconnecting with backoff is the caller's job (the agent's duty
// cycle decides when it is awake).
package wire
