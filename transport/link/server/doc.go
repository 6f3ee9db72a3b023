// Package server is the relay's side of the device link
// (transport/link/wire describes the protocol): an http.Handler that
// accepts a device's WebSocket, announces its bounds, stores the state it
// publishes (through Agents), serves its pulls and acks from the relay's
// queue (through Queue, store/queue's records) and forwards live requests
// to it. Only the relay links it; the device's side is transport/link.
package server
