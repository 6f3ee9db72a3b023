// Package server is the relay's side of the device link
// (transport/link/wire describes the protocol): an http.Handler that
// accepts a device's WebSocket, announces its bounds, stores the state it
// publishes (through Agents), serves its pulls and acks from the relay's
// queue (through Queue, store/queue's records) and forwards live requests
// to it. Only the relay links it; the device's side is transport/link.
//
// What a link may do is bound to the link: a link token (purpose
// torpor-link) is accepted once, for as long as it is valid with the
// clock skew allowed (Server.Spent, by the SHA-256 of its one spelling:
// in memory, MaxSpentTokens at most, or the fleet's shared memory); the
// connection becomes the agent's link, and may replace its previous one,
// only after the device signed the challenge with its DID's key
// (handshake.go); and an ack deletes only records delivered on the same
// link (CodeNotDelivered otherwise, nothing deleted).
package server
