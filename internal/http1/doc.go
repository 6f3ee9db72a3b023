// Package http1 is the little of HTTP/1.1 (RFC 9112) that torpor-agent
// speaks as a client: one request written on a connection the caller
// opened, and its response read back, head and body. The agent uses it for
// the WebSocket opening handshake of the device link (an HTTP/1.1 Upgrade,
// RFC 6455 Section 4.1; transport/link/internal/wsclient) and for the POST
// to the application's Unix socket (runtime/deliver).
//
// It exists so that torpor-agent does not link net/http, whose client
// (with its transport, cookie, proxy, MIME and HTTP/2 code) is a large
// part of a binary that must fit a small board's budget
// (docs/footprint.md); internal/deptest keeps the agent free of it.
//
// What it does, and nothing more: the request line, header fields and a
// body with Content-Length (RFC 9112 Sections 3, 5, 6.2); the status line
// and header fields of the response, with bounds on their size; the
// response body framed as RFC 9112 Section 6.3 says (no body for 1xx, 204,
// 304 or a HEAD request; chunked transfer coding, Section 7.1; else
// Content-Length; else until the server closes); and the Date header's
// IMF-fixdate (RFC 9110 Section 5.6.7). One request per connection, no
// keep-alive, no redirects, no proxies, no compression.
package http1
