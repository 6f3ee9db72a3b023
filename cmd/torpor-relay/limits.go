package main

import (
	"bufio"
	"bytes"
	"container/list"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay"
)

// httpLimits are the flags that bound what one HTTP client may hold of the
// relay: time per request, idle keep-alives and connections.
type httpLimits struct {
	readHeader, read, write, idle time.Duration
	minBodyRate                   int64 // bytes per second
	maxConns                      int
}

func (l *httpLimits) register(fs *flag.FlagSet) {
	fs.DurationVar(&l.readHeader, "read-header-timeout", 10*time.Second, "How long a client may take to send a request's headers.")
	fs.DurationVar(&l.read, "read-timeout", 30*time.Second, "How long a request body may take to arrive before it must keep up --min-body-rate; a slower body is cut off. The device link (WebSocket) is exempt.")
	fs.Int64Var(&l.minBodyRate, "min-body-rate", 1024, "Bytes per second a request body must average once --read-timeout has passed.")
	fs.DurationVar(&l.write, "write-timeout", 60*time.Second, "How long the relay may take to answer a request, from its headers, including the wait for a live device's answer (30 s). The device link (WebSocket) is exempt.")
	fs.DurationVar(&l.idle, "idle-timeout", 60*time.Second, "How long an idle keep-alive connection is kept open.")
	fs.IntVar(&l.maxConns, "max-conns", defaultMaxConns(openFileLimit()), "The most HTTP connections open at once, device links included. At the cap a new connection closes the oldest one that has not sent a request, or is refused (503). The default is half the open-file limit (RLIMIT_NOFILE), between 64 and 16384, leaving room for the MQTT broker and the stores.")
}

// defaultMaxConns is half the open-file limit nofile, at least 64 and at
// most 16384; 1024 when the limit is unknown.
func defaultMaxConns(nofile uint64) int {
	if nofile == 0 {
		return 1024
	}
	return int(min(max(nofile/2, 64), 16384))
}

func (l *httpLimits) validate() error {
	if l.readHeader <= 0 || l.read <= 0 || l.write <= 0 || l.idle <= 0 {
		return errors.New("--read-header-timeout, --read-timeout, --write-timeout and --idle-timeout must be positive")
	}
	if l.minBodyRate <= 0 {
		return errors.New("--min-body-rate must be positive")
	}
	if l.maxConns < 1 {
		return errors.New("--max-conns must be at least 1")
	}
	return nil
}

// server returns the HTTP server of h with l's limits. A global
// ReadTimeout or WriteTimeout would cut the long-lived device link, so
// only the header and idle timeouts are the server's; the others are set
// per request (deadlines).
func (l *httpLimits) server(h http.Handler) *http.Server {
	return &http.Server{Handler: l.deadlines(h), ReadHeaderTimeout: l.readHeader, IdleTimeout: l.idle}
}

// deadlines sets each request's write deadline and, for a request with a
// body, a read deadline that moves with the bytes read (minRateBody).
// The device link's upgrade gets none: its connection lives for a wake,
// and the link pings it.
func (l *httpLimits) deadlines(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Method == http.MethodGet && r.URL.Path == wire.Path {
			// No deadline, not even one left by an earlier request on
			// this connection.
			rc.SetReadDeadline(time.Time{})
			rc.SetWriteDeadline(time.Time{})
			h.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		rc.SetWriteDeadline(start.Add(l.write))
		if r.Body != nil && r.Body != http.NoBody {
			rc.SetReadDeadline(start.Add(l.read))
			r.Body = &minRateBody{ReadCloser: r.Body, rc: rc, start: start, grace: l.read, rate: l.minBodyRate}
		}
		h.ServeHTTP(w, r)
	})
}

// minRateBody is a request body that must arrive within grace, plus one
// second per rate bytes read: after each read the connection's read
// deadline moves to start + grace + read/rate. A body trickled slower is
// cut off by the deadline; a slow but steady upload (a Pi on a poor link)
// keeps going. At the body's end (io.EOF) the deadline is lifted, so that a
// handler waiting for a device's answer is not cut off by it.
type minRateBody struct {
	io.ReadCloser
	rc    *http.ResponseController
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

// open returns how many connections l holds.
func (l *connLimit) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// keyPackageArgs are the flags of KeyPackage fetches.
type keyPackageArgs struct {
	budget         int
	budgetWindow   time.Duration
	trustedProxies []netip.Prefix
}

func (k *keyPackageArgs) register(fs *flag.FlagSet) {
	fs.IntVar(&k.budget, "keypackage-budget", 64, "How many KeyPackages one agent's pool gives out per --keypackage-budget-window, to all callers together; beyond it the agent's last-resort KeyPackage is served.")
	fs.DurationVar(&k.budgetWindow, "keypackage-budget-window", time.Hour, "The window of --keypackage-budget.")
	fs.Func("trusted-proxy", "A reverse proxy (CIDR prefix or address) whose X-Forwarded-For entries --trust-forwarded-for skips (repeat the flag).", func(s string) error {
		p, err := relay.ParseTrustedProxy(s)
		if err != nil {
			return err
		}
		k.trustedProxies = append(k.trustedProxies, p)
		return nil
	})
}

func (k *keyPackageArgs) validate(rate int) error {
	if rate < 1 || k.budget < 1 || k.budgetWindow <= 0 {
		return errors.New("--keypackage-rate, --keypackage-budget and --keypackage-budget-window must be positive")
	}
	return nil
}
