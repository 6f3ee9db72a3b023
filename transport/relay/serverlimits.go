package relay

import (
	"bufio"
	"bytes"
	"container/list"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// ServerLimits bound what one HTTP client may hold of a relay's server:
// time per request, idle keep-alives and connections. Every member must
// be positive (Validate); cmd/torpor-relay's flags give the defaults
// (docs/operations.md).
type ServerLimits struct {
	// ReadHeaderTimeout is how long a client may take to send a request's
	// headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a request body may take to arrive before it
	// must keep up MinBodyRate; a slower body is cut off. The device link
	// (wire.Path) is exempt.
	ReadTimeout time.Duration
	// MinBodyRate is the bytes per second a request body must average
	// once ReadTimeout has passed.
	MinBodyRate int64
	// WriteTimeout is how long the relay may take to answer a request,
	// from its headers, including the wait for a live device's answer.
	// The device link is exempt.
	WriteTimeout time.Duration
	// IdleTimeout is how long an idle keep-alive connection is kept open.
	IdleTimeout time.Duration
	// MaxConns is the most connections open at once, device links
	// included (DefaultMaxConns). At the cap a new connection closes the
	// oldest one that has not sent a request, or is refused (503).
	MaxConns int
}

// Validate reports a member that is not positive.
func (l ServerLimits) Validate() error {
	if l.ReadHeaderTimeout <= 0 || l.ReadTimeout <= 0 || l.WriteTimeout <= 0 || l.IdleTimeout <= 0 {
		return errors.New("relay: ServerLimits' ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout must be positive")
	}
	if l.MinBodyRate <= 0 {
		return errors.New("relay: ServerLimits.MinBodyRate must be positive")
	}
	if l.MaxConns < 1 {
		return errors.New("relay: ServerLimits.MaxConns must be at least 1")
	}
	return nil
}

// DefaultMaxConns is half the process's open-file limit (RLIMIT_NOFILE,
// which the Go runtime raises to the hard limit at start), at least 64
// and at most 16384, leaving room for the MQTT broker and the stores;
// 1024 when the limit is unknown.
func DefaultMaxConns() int { return maxConnsFor(openFileLimit()) }

// maxConnsFor is DefaultMaxConns for the open-file limit nofile (0:
// unknown).
func maxConnsFor(nofile uint64) int {
	if nofile == 0 {
		return 1024
	}
	return int(min(max(nofile/2, 64), 16384))
}

// Server returns the HTTP server of h with l's limits and the listener,
// around ln, to serve it on (Serve or ServeTLS). plain says the server
// speaks plain HTTP, so that a connection refused at the cap can be
// answered 503; under TLS it is closed. A global ReadTimeout or
// WriteTimeout would cut the long-lived device link, so only the header
// and idle timeouts are the server's; the others are set per request
// (deadlines).
func (l ServerLimits) Server(h http.Handler, ln net.Listener, plain bool) (*http.Server, net.Listener, error) {
	if err := l.Validate(); err != nil {
		return nil, nil, err
	}
	cl := newConnLimit(ln, l.MaxConns, plain)
	srv := &http.Server{Handler: l.deadlines(h), ReadHeaderTimeout: l.ReadHeaderTimeout, IdleTimeout: l.IdleTimeout, ConnState: cl.connState}
	// Shutdown waits for a connection that never sent a request (StateNew)
	// until it is 5 s old: a client's spare connection held a relay's stop
	// in a rolling restart that long. Close those at once, as the cap does.
	// (An HTTP/2 connection carrying requests is StateActive too: net/http's
	// HTTP/2 server runs the hook per connection.)
	srv.RegisterOnShutdown(cl.closeWaiting)
	return srv, cl, nil
}

// deadlines sets each request's write deadline and, for a request with a
// body, a read deadline that moves with the bytes read (minRateBody).
// The device link's upgrade gets none: its connection lives for a wake,
// and the link pings it.
func (l ServerLimits) deadlines(h http.Handler) http.Handler {
	return &deadlined{l: l, h: h}
}

// deadlined is ServerLimits.deadlines's handler.
type deadlined struct {
	l ServerLimits
	h http.Handler
}

func (d *deadlined) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l, rc := d.l, http.NewResponseController(w) // rc does not leave the call: no allocation
	if r.Method == http.MethodGet && r.URL.Path == wire.Path {
		// No deadline, not even one left by an earlier request on
		// this connection.
		rc.SetReadDeadline(time.Time{})
		rc.SetWriteDeadline(time.Time{})
		d.h.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	rc.SetWriteDeadline(start.Add(l.WriteTimeout))
	if r.Body != nil && r.Body != http.NoBody {
		rc.SetReadDeadline(start.Add(l.ReadTimeout))
		// The body holds its own copy of rc: one allocation for both.
		r.Body = &minRateBody{ReadCloser: r.Body, rc: *rc, start: start, grace: l.ReadTimeout, rate: l.MinBodyRate}
	}
	d.h.ServeHTTP(w, r)
}

// minRateBody is a request body that must arrive within grace, plus one
// second per rate bytes read: after each read the connection's read
// deadline moves to start + grace + read/rate. A body trickled slower is
// cut off by the deadline; a slow but steady upload (a Pi on a poor link)
// keeps going. At the body's end (io.EOF) the deadline is lifted, so that a
// handler waiting for a device's answer is not cut off by it.
type minRateBody struct {
	io.ReadCloser
	rc    http.ResponseController
	start time.Time
	grace time.Duration
	rate  int64
	n     int64
}

func (b *minRateBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		// Any other error keeps the deadline: the server reads what is
		// left of a body its handler did not finish, and must not wait
		// for a trickle without one.
		return n, err
	}
	b.rc.SetReadDeadline(b.start.Add(b.grace + time.Duration(b.n*int64(time.Second)/b.rate)))
	return n, nil
}

// connLimit is a listener that holds at most max connections open. At the
// cap, a new connection closes the oldest one that has not sent (a byte
// of) a request, a fresh one or an idle keep-alive, so that connections
// opened only to be held cannot starve real requests; when all are busy
// it is answered 503 (plain HTTP) or closed (TLS) at once.
type connLimit struct {
	net.Listener
	max   int
	plain bool // not TLS: a refusal can be written in HTTP
	// refusing bounds the refusals being written at once.
	refusing chan struct{}

	mu sync.Mutex
	// mu guards all following fields.
	conns map[*limitedConn]*list.Element // open connections
	idle  list.List                      // of *limitedConn: new or idle, oldest first
}

type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
}

func newConnLimit(ln net.Listener, max int, plain bool) *connLimit {
	return &connLimit{Listener: ln, max: max, plain: plain, conns: map[*limitedConn]*list.Element{}, refusing: make(chan struct{}, 64)}
}

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l}
		if l.admit(lc) {
			return lc, nil
		}
		l.refuse(c)
	}
}

// admit adds c, closing the oldest connection without a request when at
// the cap; it returns false when all are busy.
func (l *connLimit) admit(c *limitedConn) bool {
	l.mu.Lock()
	var victim *limitedConn
	if len(l.conns) >= l.max {
		e := l.idle.Front()
		if e == nil {
			l.mu.Unlock()
			return false
		}
		victim = e.Value.(*limitedConn)
		l.dropLocked(victim)
	}
	l.conns[c] = l.idle.PushBack(c)
	l.mu.Unlock()
	if victim != nil {
		victim.Conn.Close()
	}
	return true
}

func (l *connLimit) dropLocked(c *limitedConn) {
	if e := l.conns[c]; e != nil {
		l.idle.Remove(e)
	}
	delete(l.conns, c)
}

// refuse answers a connection over the cap and closes it. The answer is
// written, the connection half-closed and what the client sent read
// away for up to a second before it is closed, so that the client reads
// the answer rather than a reset; at most refusing of these run at once,
// beyond which connections are closed without one.
func (l *connLimit) refuse(c net.Conn) {
	if !l.plain {
		c.Close()
		return
	}
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		const body = `{"error":"too_many_connections","message":"the relay holds its most open connections (--max-conns); try again later"}`
		c.SetDeadline(time.Now().Add(time.Second))
		readHead(c)
		fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// readHead reads a request's head (up to its empty line, at most 16 KiB)
// from c, so that the refusal comes after the request as an HTTP/1.1
// answer does: a client that has not sent its request yet takes an
// answer that comes first for a broken connection (Go's transport logs
// "Unsolicited response received on idle HTTP channel" and fails the
// request). It gives up at c's deadline.
func readHead(c net.Conn) {
	br := bufio.NewReaderSize(io.LimitReader(c, 16<<10), 4096)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil || len(bytes.TrimRight(line, "\r\n")) == 0 {
			return
		}
	}
}

// connState is the http.Server's ConnState hook: it tracks which
// connections may be closed at the cap.
func (l *connLimit) connState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, open := l.conns[lc]
	if !open {
		return
	}
	switch st {
	case http.StateIdle:
		if e == nil {
			l.conns[lc] = l.idle.PushBack(lc)
		}
	case http.StateActive, http.StateHijacked:
		if e != nil {
			l.idle.Remove(e)
			l.conns[lc] = nil
		}
	}
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.dropLocked(c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// closeWaiting closes every connection without a request in progress:
// new ones that sent none yet and idle keep-alives.
func (l *connLimit) closeWaiting() {
	l.mu.Lock()
	var waiting []*limitedConn
	for e := l.idle.Front(); e != nil; e = l.idle.Front() {
		c := e.Value.(*limitedConn)
		l.dropLocked(c)
		waiting = append(waiting, c)
	}
	l.mu.Unlock()
	for _, c := range waiting {
		c.Conn.Close()
	}
}

// open returns how many connections l holds.
func (l *connLimit) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
