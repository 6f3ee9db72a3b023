package link

import (
	"context"
	"net"
	"sync/atomic"
)

// Traffic is what a link sent and received on its TCP connection, counted
// in bytes at the socket: the HTTP upgrade (and the one retry of a refused
// token), TLS and WebSocket framing included. On a cellular modem these
// are the bytes the device pays for.
type Traffic struct {
	Sent, Received int64
}

// Traffic returns what the link sent and received so far, from the start
// of Dial.
func (c *Client) Traffic() Traffic {
	return Traffic{Sent: c.meter.sent.Load(), Received: c.meter.received.Load()}
}

// meter counts the bytes of every connection its dial opened.
type meter struct{ sent, received atomic.Int64 }

// dial opens a TCP connection whose reads and writes m counts.
func (m *meter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &meteredConn{Conn: conn, m: m}, nil
}

// meteredConn is a net.Conn whose reads and writes count in m.
type meteredConn struct {
	net.Conn
	m *meter
}

func (c *meteredConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.m.received.Add(int64(n))
	return n, err
}

func (c *meteredConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.m.sent.Add(int64(n))
	return n, err
}
