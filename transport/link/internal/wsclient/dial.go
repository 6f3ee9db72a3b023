package wsclient

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/internal/http1"
)

// DefaultReadLimit is the read limit of a Conn whose Options set none.
const DefaultReadLimit = 32 << 10

// maxRefusalBody is how much of a refusal's body a HandshakeError keeps.
const maxRefusalBody = 1024

// Options configure Dial. The zero value is usable.
type Options struct {
	// Header holds extra request header fields (Authorization).
	Header []http1.Field
	// Subprotocols are offered in Sec-WebSocket-Protocol (Section 4.1).
	Subprotocols []string
	// TLSConfig configures wss connections; nil means the system roots.
	// Its ServerName, when empty, is the URL's host (SNI).
	TLSConfig *tls.Config
	// Proxy chooses the HTTP proxy to reach a URL through (with CONNECT);
	// nil, or a nil URL, is a direct connection. ProxyFromEnvironment
	// chooses as net/http's default client does.
	Proxy func(target *url.URL) (*url.URL, error)
	// NetDial opens the TCP connection; nil is a net.Dialer's.
	NetDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ReadLimit bounds a message Read returns; 0 is DefaultReadLimit.
	ReadLimit int64
	// IdleTimeout bounds how long Read waits for the first byte of a
	// frame (a ping counts); 0 is no bound. A server that pings every
	// interval keeps a quiet connection alive within twice that interval.
	IdleTimeout time.Duration
	// FrameTimeout bounds how long a frame's header takes to arrive once
	// its first byte has, and with MinReadRate its payload: FrameTimeout
	// plus the payload's length at MinReadRate bytes a second (no bound on
	// the payload when MinReadRate is 0). 0 is no bound. A server trickling
	// a frame cannot hold a Read longer than that per frame.
	FrameTimeout time.Duration
	MinReadRate  int64
}

// HandshakeError is a server's answer other than 101 to the opening
// handshake.
type HandshakeError struct {
	StatusCode int
	Status     string // "401 Unauthorized"
	Header     http1.Header
	Body       []byte // the body's first bytes (up to 1 KiB)
}

func (e *HandshakeError) Error() string {
	return "websocket: the server answered the upgrade with " + e.Status
}

// ErrHandshake wraps every failure of a 101 answer to pass Section 4.1's
// checks.
var ErrHandshake = errors.New("websocket: bad handshake")

// Dial opens a WebSocket connection to rawURL (ws or wss). ctx bounds the
// connection and the handshake; it does not outlive Dial.
func Dial(ctx context.Context, rawURL string, o *Options) (*Conn, error) {
	if o == nil {
		o = &Options{}
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, fmt.Errorf("websocket: %q is not a ws or wss URL", rawURL)
	}
	nc, err := dialNet(ctx, u, o)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("websocket: %w (%w)", context.Cause(ctx), err)
	}
	if err != nil {
		return nil, err
	}
	stop := watch(ctx, nc.SetDeadline)
	c, err := handshake(nc, u, o)
	if !stop() && err == nil {
		err = fmt.Errorf("websocket: %w", context.Cause(ctx))
	} else if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("websocket: %w (%w)", context.Cause(ctx), err)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

// dialNet opens the TCP connection, directly or through the proxy
// o.Proxy chooses, and TLS over it for wss.
func dialNet(ctx context.Context, u *url.URL, o *Options) (net.Conn, error) {
	dial := o.NetDial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	var proxy *url.URL
	if o.Proxy != nil {
		var err error
		if proxy, err = o.Proxy(u); err != nil {
			return nil, err
		}
	}
	addr := net.JoinHostPort(u.Hostname(), defaultPort(u))
	var nc net.Conn
	var err error
	if proxy != nil {
		nc, err = dialProxy(ctx, o, dial, proxy, addr)
	} else {
		nc, err = dial(ctx, "tcp", addr)
	}
	if err != nil || u.Scheme == "ws" {
		return nc, err
	}
	tc := tls.Client(nc, tlsConfig(o, u.Hostname()))
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}

// handshake sends the opening handshake (Section 4.1) and checks the
// answer.
func handshake(nc net.Conn, u *url.URL, o *Options) (*Conn, error) {
	var nonce [16]byte
	rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	hdr := []http1.Field{
		{Name: "Upgrade", Value: "websocket"},
		{Name: "Connection", Value: "Upgrade"},
		{Name: "Sec-WebSocket-Key", Value: key},
		{Name: "Sec-WebSocket-Version", Value: "13"},
	}
	if len(o.Subprotocols) > 0 {
		hdr = append(hdr, http1.Field{Name: "Sec-WebSocket-Protocol", Value: strings.Join(o.Subprotocols, ", ")})
	}
	req := &http1.Request{Method: "GET", Target: u.RequestURI(), Host: u.Host, Header: append(hdr, o.Header...)}
	if err := http1.WriteRequest(nc, req); err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	br := bufio.NewReaderSize(nc, 4096)
	resp, err := http1.ReadResponse(br, "GET")
	if err != nil {
		return nil, fmt.Errorf("websocket: reading the handshake's answer: %w", err)
	}
	if resp.StatusCode != 101 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
		return nil, &HandshakeError{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header, Body: body}
	}
	proto, err := checkAnswer(resp.Header, key, o.Subprotocols)
	if err != nil {
		return nil, err
	}
	limit := o.ReadLimit
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	c := newConn(nc, br, limit, proto)
	c.idle, c.frame, c.rate = o.IdleTimeout, o.FrameTimeout, o.MinReadRate
	return c, nil
}

// checkAnswer checks a 101 answer's fields as Section 4.1 (the client's
// requirements 2 to 6) says, and returns the subprotocol it chose.
func checkAnswer(h http1.Header, key string, offered []string) (string, error) {
	if !strings.EqualFold(h.Get("Upgrade"), "websocket") {
		return "", fmt.Errorf("%w: Upgrade %q", ErrHandshake, h.Get("Upgrade"))
	}
	if !h.HasToken("Connection", "upgrade") {
		return "", fmt.Errorf("%w: Connection %q", ErrHandshake, h.Get("Connection"))
	}
	if got, want := h.Get("Sec-WebSocket-Accept"), AcceptKey(key); got != want {
		return "", fmt.Errorf("%w: Sec-WebSocket-Accept %q, want %q", ErrHandshake, got, want)
	}
	if ext := h.Values("Sec-WebSocket-Extensions"); len(ext) > 0 {
		return "", fmt.Errorf("%w: extension %q, none was offered", ErrHandshake, strings.Join(ext, ", "))
	}
	proto := h.Get("Sec-WebSocket-Protocol")
	if len(h.Values("Sec-WebSocket-Protocol")) > 1 || proto != "" && !slices.Contains(offered, proto) {
		return "", fmt.Errorf("%w: subprotocol %q was not offered", ErrHandshake, strings.Join(h.Values("Sec-WebSocket-Protocol"), ", "))
	}
	return proto, nil
}

// AcceptKey is the Sec-WebSocket-Accept for key (Section 4.2.2, item 5.4):
// base64 of the SHA-1 of the key and the protocol's GUID.
func AcceptKey(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// watch breaks the connection's I/O (a deadline in the past) when ctx
// ends, so that the I/O fails only after ctx.Err is set. Its result stops
// that; it reports false when ctx had already ended, and the connection
// must then be abandoned.
func watch(ctx context.Context, set func(time.Time) error) func() bool {
	set(time.Time{})
	return context.AfterFunc(ctx, func() { set(brokenDeadline) })
}

// brokenDeadline is the deadline in the past watch sets to break I/O.
var brokenDeadline = time.Unix(1, 0)
