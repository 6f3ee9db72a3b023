package relay

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// These tests exercise socket deadlines, which run on real time: they use
// timeouts of a fraction of a second and wait for the server (a real peer)
// with real-time bounds.

// limitedServer serves h behind l's limits on a loopback port and returns
// its address and the listener.
func limitedServer(t *testing.T, l ServerLimits, h http.Handler) (string, *connLimit) {
	t.Helper()
	addr, cl, _ := startLimited(t, l, h, nil)
	return addr, cl
}

// startLimited serves h behind l's limits on a loopback port, over TLS
// when certs is not nil (HTTP/2 offered), and returns its address, the
// listener and the server.
func startLimited(t *testing.T, l ServerLimits, h http.Handler, certs []tls.Certificate) (string, *connLimit, *http.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, limited, err := l.Server(h, ln, certs == nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := limited.(*connLimit)
	if certs == nil {
		go srv.Serve(cl)
	} else {
		srv.TLSConfig = &tls.Config{Certificates: certs}
		go srv.ServeTLS(cl, "", "")
	}
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), cl, srv
}

// held reports how many connections cl holds and how many of them have
// no request in progress.
func (l *connLimit) held() (open, waiting int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns), l.idle.Len()
}

func testLimits() ServerLimits {
	return ServerLimits{ReadHeaderTimeout: time.Second, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 2 * time.Second, IdleTimeout: 300 * time.Millisecond, MinBodyRate: 1000, MaxConns: 100}
}

// countBody answers how many body bytes it read, or 400 when reading failed.
var countBody = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprint(w, n)
})

// TestIdleKeepAliveClosed: a keep-alive connection left idle is closed
// after IdleTimeout.
func TestIdleKeepAliveClosed(t *testing.T) {
	addr, cl := limitedServer(t, testLimits(), countBody)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("request: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle keep-alive: read %v, want EOF (closed by the relay)", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("closed after %v, want about the 300 ms idle timeout", d)
	}
	waitFor(t, func() bool { return cl.open() == 0 }, "the closed connection to leave the count")
}

// TestTrickledBodyCutOff: a body trickled far below MinBodyRate is cut
// off once ReadTimeout has passed, long before it would end.
func TestTrickledBodyCutOff(t *testing.T) {
	addr, _ := limitedServer(t, testLimits(), countBody)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
	done := make(chan error, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil && resp.StatusCode == 200 {
			err = fmt.Errorf("status %d: the whole body was read", resp.StatusCode)
		}
		done <- err
	}()
	start := time.Now()
	for i := range 100 {
		select {
		case err := <-done:
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("cut off after %v (%d bytes), want soon after the 300 ms read timeout", d, i)
			}
			t.Logf("cut off after %v: %v", time.Since(start), err) // a 400 answer or a closed connection
			return
		case <-time.After(200 * time.Millisecond): // 5 bytes a second, against 1000
		}
		if _, err := c.Write([]byte{'x'}); err != nil {
			return // closed by the relay
		}
	}
	t.Fatal("a body trickled at 5 bytes a second was read to its end")
}

// TestSteadySlowBodyKeepsGoing: a body slower than ReadTimeout allows
// in one go but above MinBodyRate is read in full.
func TestSteadySlowBodyKeepsGoing(t *testing.T) {
	l := testLimits()
	l.MinBodyRate = 100
	addr, _ := limitedServer(t, l, countBody)
	pr, pw := io.Pipe()
	go func() {
		for range 20 { // 20 chunks of 20 bytes every 50 ms: 400 B/s for 1 s
			pw.Write([]byte(strings.Repeat("x", 20)))
			time.Sleep(50 * time.Millisecond)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", "http://"+addr+"/", pr)
	req.ContentLength = 400
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "400" {
		t.Errorf("steady slow upload: %d %s, want 200 with all 400 bytes read", resp.StatusCode, b)
	}
}

// TestLinkExemptFromDeadlines: the device link's request gets no read or
// write deadline, not even one an earlier request on the connection left.
func TestLinkExemptFromDeadlines(t *testing.T) {
	l := testLimits()
	l.WriteTimeout = 200 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.Path {
			time.Sleep(500 * time.Millisecond) // a long-lived link, past the write timeout
		}
		fmt.Fprint(w, "ok")
	})
	addr, _ := limitedServer(t, l, h)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for _, path := range []string{"/healthz", wire.Path} {
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "ok" {
			t.Fatalf("%s: %q", path, b)
		}
	}
}

// TestIdleConnectionsDoNotStarve: with the cap held by connections that
// never send a request (ten times the cap of them), a real request still
// gets its answer: it closes the oldest idle one.
func TestIdleConnectionsDoNotStarve(t *testing.T) {
	l := testLimits()
	l.MaxConns, l.ReadHeaderTimeout, l.IdleTimeout = 20, time.Minute, time.Minute
	addr, cl := limitedServer(t, l, countBody)
	var idle []net.Conn
	for range 200 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	waitFor(t, func() bool { return cl.open() == 20 }, "the cap to fill")
	client := &http.Client{Timeout: 5 * time.Second}
	for i := range 5 {
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("request %d with the cap held by idle connections: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("request %d: %d", i, resp.StatusCode)
		}
	}
	if n := cl.open(); n > 20 {
		t.Errorf("%d connections open, cap 20", n)
	}
}

// TestBusyCapRefused: when every connection is busy, a new one is answered
// 503 too_many_connections at once.
func TestBusyCapRefused(t *testing.T) {
	l := testLimits()
	l.MaxConns = 2
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
		fmt.Fprint(w, "ok")
	})
	addr, cl := limitedServer(t, l, h)
	defer close(release)
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	waitFor(t, func() bool {
		open, waiting := cl.held()
		return open == 2 && waiting == 0
	}, "two busy connections")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "too_many_connections") {
		t.Errorf("over a busy cap: %d %s, want 503 too_many_connections", resp.StatusCode, b)
	}
}

// waitFor waits, in real time (the server is a real peer), until cond
// holds.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestDefaultMaxConns(t *testing.T) {
	for nofile, want := range map[uint64]int{0: 1024, 1024: 512, 100: 64, 65536: 16384, 20000: 10000} {
		if got := maxConnsFor(nofile); got != want {
			t.Errorf("maxConnsFor(%d) = %d, want %d", nofile, got, want)
		}
	}
}

// TestServerLimitsValidate: Server refuses limits with a member that is
// not positive, and takes the test's.
func TestServerLimitsValidate(t *testing.T) {
	for name, change := range map[string]func(*ServerLimits){
		"zero read header timeout": func(l *ServerLimits) { l.ReadHeaderTimeout = 0 },
		"negative read timeout":    func(l *ServerLimits) { l.ReadTimeout = -time.Second },
		"zero write timeout":       func(l *ServerLimits) { l.WriteTimeout = 0 },
		"zero idle timeout":        func(l *ServerLimits) { l.IdleTimeout = 0 },
		"zero body rate":           func(l *ServerLimits) { l.MinBodyRate = 0 },
		"zero connections":         func(l *ServerLimits) { l.MaxConns = 0 },
	} {
		l := testLimits()
		change(&l)
		if _, _, err := l.Server(http.NotFoundHandler(), nil, true); err == nil {
			t.Errorf("%s: Server took %+v", name, l)
		}
	}
	if err := testLimits().Validate(); err != nil {
		t.Errorf("the test's limits: %v", err)
	}
}

// TestShutdownClosesConnectionsWithoutARequest: a connection that sent no
// request does not hold up Shutdown (net/http waits until it is 5 s old),
// and one with a request in progress is answered before it closes.
func TestShutdownClosesConnectionsWithoutARequest(t *testing.T) {
	release := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		fmt.Fprint(w, "done")
	})
	l := testLimits()
	l.ReadHeaderTimeout, l.IdleTimeout = time.Minute, time.Minute
	addr, cl, srv := startLimited(t, l, slow, nil)

	spare, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	fmt.Fprintf(busy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	waitFor(t, func() bool {
		open, waiting := cl.held()
		return open == 2 && waiting == 1
	}, "one new and one busy connection")

	done := shutdownClosing(t, srv, spare)
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the request in progress at shutdown: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "done" {
		t.Errorf("the request in progress at shutdown: %d %q", resp.StatusCode, body)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v, want nil before net/http's 5 s for a new connection", err)
	}
}

// tlsLimitedServer serves h behind l's limits over TLS, HTTP/2 offered,
// and returns its address, the listener and a client that trusts it and
// speaks HTTP/2.
func tlsLimitedServer(t *testing.T, l ServerLimits, h http.Handler) (string, *connLimit, *http.Server, *http.Client) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	certs, client := ts.TLS.Certificates, ts.Client()
	ts.Close()
	addr, cl, srv := startLimited(t, l, h, certs)
	return addr, cl, srv, client
}

// TestHTTP2ConnectionCarryingARequestIsNotClosedAtTheCap: an HTTP/2
// connection goes through the ConnState hooks as a whole (StateActive
// while it carries a request), so the cap, and a shutdown, take it for a
// connection without a request only when it carries none.
func TestHTTP2ConnectionCarryingARequestIsNotClosedAtTheCap(t *testing.T) {
	entered, release := make(chan struct{}, 8), make(chan struct{})
	var calls atomic.Int32
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		entered <- struct{}{}
		<-release
		fmt.Fprint(w, "done")
	})
	l := testLimits()
	l.MaxConns, l.ReadHeaderTimeout, l.IdleTimeout = 2, time.Minute, time.Minute
	addr, cl, _, client := tlsLimitedServer(t, l, slow)
	type result struct {
		resp *http.Response
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := client.Get("https://" + addr + "/")
		if err != nil {
			got <- result{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- result{resp, string(body), err}
	}()
	<-entered
	// Two connections that send nothing: the first fills the cap, the
	// second closes the oldest connection without a request, which must
	// be the first, not the HTTP/2 one.
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	waitFor(t, func() bool {
		open, waiting := cl.held()
		return open == 2 && waiting == 1
	}, "the cap to close one of the new connections")
	close(release)
	r := <-got
	if r.err != nil {
		t.Fatalf("the HTTP/2 request at the cap: %v", r.err)
	}
	// Go's HTTP/2 client sends a GET again on a new connection when its
	// connection is lost: the handler would run twice.
	if n := calls.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want 1: the request's connection was closed under it", n)
	}
	if r.resp.ProtoMajor != 2 || r.resp.StatusCode != 200 || r.body != "done" {
		t.Errorf("the HTTP/2 request at the cap: %s %d %q, want HTTP/2.0 200 \"done\"", r.resp.Proto, r.resp.StatusCode, r.body)
	}
}

// TestShutdownOverTLSClosesConnectionsWithoutARequest: as over plain HTTP,
// and an HTTP/2 request in progress is answered.
func TestShutdownOverTLSClosesConnectionsWithoutARequest(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		fmt.Fprint(w, "done")
	})
	l := testLimits()
	l.ReadHeaderTimeout, l.IdleTimeout = time.Minute, time.Minute
	addr, _, srv, client := tlsLimitedServer(t, l, slow)
	got := make(chan error, 1)
	go func() {
		resp, err := client.Get("https://" + addr + "/")
		if err == nil {
			var body []byte
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && (resp.ProtoMajor != 2 || string(body) != "done") {
				err = fmt.Errorf("%s %d %q, want HTTP/2.0 \"done\"", resp.Proto, resp.StatusCode, body)
			}
		}
		got <- err
	}()
	<-entered
	spare, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	done := shutdownClosing(t, srv, spare)
	close(release)
	if err := <-got; err != nil {
		t.Errorf("the HTTP/2 request in progress at shutdown: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v, want nil before net/http's 5 s for a new connection", err)
	}
}

// shutdownClosing starts srv's Shutdown, checks that it closes spare, a
// connection that sent no request, and returns what Shutdown returns. Its
// 3 s are well under net/http's 5 s for a new connection: without closing
// spare, Shutdown runs out of them.
func shutdownClosing(t *testing.T, srv *http.Server, spare net.Conn) <-chan error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	spare.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := spare.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the connection without a request: read %v, want EOF (closed at shutdown)", err)
	}
	return done
}
