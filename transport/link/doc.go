// Package link is the device's side of the device link: the one outbound
// connection a sleeping device keeps to its relay while it is awake. Over
// it the device publishes its state (reachability mode and window, next
// wake, signed Agent Card, KeyPackages, signed liveness pulse), drains the
// records the relay queued while it slept, and answers the live requests
// the relay forwards to it inside its window. Dial makes a Client.
//
// Dial authenticates the link three ways (package wire's doc, "Handshake"):
// a link token (bearer.IssueLink: purpose torpor-link, a random jti, never
// reused), then the device's signature over the relay's challenge, which
// only the holder of the device key can make. A copied token alone opens
// nothing.
//
// A device whose clock is far off (a Raspberry Pi without an RTC boots
// with fake-hwclock's saved time) issues a token the relay refuses as
// expired; Dial then issues it once more at the time of the relay's 401
// (its Date header). After the handshake, Client.RelayTime is the time
// the relay stated in its challenge, which the agent may use to move the
// clock it judges expiry by forward (runtime/trusted).
//
// Dial's whole opening (connection, upgrade, challenge, proof, hello) has
// its own bound, HandshakeTimeout, on the link's clock, whatever the
// caller's context allows: a relay trickling its 101 costs the device that
// long, not its window. Once open, each read has a deadline on the
// connection (IdleTimeout for a frame to begin, the relay pinging every
// wire.PingInterval, or every Config.PingInterval the device asked for in
// wire.PingHeader; FrameTimeout and MinReadRate for it to arrive whole).
//
// The frames and the types they carry are package wire
// (transport/link/wire), whose doc describes the protocol and why it is a
// WebSocket; the relay's side is package server (transport/link/server).
// This package imports neither the relay nor its queue store, so
// torpor-agent links neither. Nor does it import net/http: the WebSocket
// is package wsclient (transport/link/internal/wsclient, written from RFC
// 6455 over net and crypto/tls), its HTTP/1.1 upgrade internal/http1. Like
// net/http's default client before it, the link reaches the relay through
// the HTTP proxy HTTPS_PROXY (or HTTP_PROXY for an http relay) names, unless
// NO_PROXY exempts the relay (wsclient.ProxyFromEnvironment), with a
// CONNECT tunnel.
package link
