// Package wsclient is the client side of the WebSocket protocol (RFC
// 6455) as the device link (transport/link) uses it, written for Torpor so
// that torpor-agent links neither net/http nor a WebSocket module
// (docs/footprint.md; internal/deptest). The relay's side keeps
// github.com/coder/websocket (transport/link/server); the tests run this
// client against it.
//
// Dial opens a TCP connection, directly or through an HTTP proxy's
// CONNECT tunnel (Options.Proxy; ProxyFromEnvironment reads the variables
// net/http reads), then TLS for wss (with SNI and the system roots unless
// a tls.Config says otherwise), and sends the opening handshake, an
// HTTP/1.1 GET with Upgrade (Section 4.1) written and read with
// internal/http1. It checks the server's 101 answer as Section 4.1 requires
// of a client (Upgrade, Connection, Sec-WebSocket-Accept computed as
// Section 4.2.2 says, no extension, a subprotocol it offered). Any other
// answer is a *HandshakeError holding the status, the header and the
// start of the body, so the link can quote the relay's refusal and read
// its Date.
//
// A Conn then reads and writes whole messages. Every frame it writes is
// masked with a fresh key (Section 5.3); it fails the connection (Section
// 7.1.7) on a masked frame from the server, reserved bits or opcodes, a
// fragmented control frame or one over 125 bytes, a continuation that
// continues nothing, or a message over its read limit (status 1009, before
// the payload is read). It answers pings with pongs (Section 5.5.2) while
// it reads, echoes the server's close frame (Section 5.5.1) and reports it
// as a *CloseError, and Close runs the closing handshake (Section 7). It
// does not check that text messages are UTF-8 (Section 8.1): the link sends
// only binary messages and refuses text ones itself. No extension
// (permessage-deflate) is offered.
//
// Reads and writes take a context: its deadline is the connection's, and
// its end breaks the connection (a frame cut in half cannot be resumed).
// Options.IdleTimeout, FrameTimeout and MinReadRate give each frame a read
// deadline of its own (real time, the server being a real peer): one for
// its first byte to come, one for the rest to follow.
package wsclient
