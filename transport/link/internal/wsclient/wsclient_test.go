package wsclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/torpor-dev/torpor/internal/http1"
	"github.com/torpor-dev/torpor/internal/nettest"
)

// coderServer runs coder/websocket's server (the relay's side of the
// link) with handler on each connection.
func coderServer(t *testing.T, handler func(ctx context.Context, ws *websocket.Conn, r *http.Request)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t" {
			w.Header().Set("Date", "Sun, 06 Nov 1994 08:49:37 GMT")
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"p.v2"}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(4 << 20)
		handler(r.Context(), ws, r)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// authT is the header coderServer requires.
var authT = []http1.Field{{Name: "Authorization", Value: "Bearer t"}}

func dialT(t *testing.T, url string) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), url, &Options{
		Header:       authT,
		Subprotocols: []string{"p.v1", "p.v2"}, ReadLimit: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEchoCoder sends messages of several sizes (each length encoding of
// Section 5.2) to coder/websocket's server, which echoes them.
func TestEchoCoder(t *testing.T) {
	url := coderServer(t, func(ctx context.Context, ws *websocket.Conn, _ *http.Request) {
		for {
			typ, b, err := ws.Read(ctx)
			if err != nil {
				return
			}
			ws.Write(ctx, typ, b)
		}
	})
	c := dialT(t, url)
	defer c.Close(StatusNormalClosure, "")
	if c.Subprotocol() != "p.v2" {
		t.Errorf("subprotocol %q, want p.v2", c.Subprotocol())
	}
	ctx := context.Background()
	for _, n := range []int{0, 1, 125, 126, 65535, 65536, 3 << 20} {
		msg := bytes.Repeat([]byte{byte(n)}, n)
		if err := c.Write(ctx, OpBinary, msg); err != nil {
			t.Fatal(err)
		}
		op, got, err := c.Read(ctx)
		if err != nil || op != OpBinary || !bytes.Equal(got, msg) {
			t.Fatalf("echo of %d bytes: op %d, %d bytes, %v", n, op, len(got), err)
		}
	}
}

// TestCoderPingAndClose: a ping from the server is answered while the
// client reads (coder's Ping returns when the pong arrives), and the
// server's close frame reaches the client with its code and reason.
func TestCoderPingAndClose(t *testing.T) {
	url := coderServer(t, func(ctx context.Context, ws *websocket.Conn, _ *http.Request) {
		go ws.Read(ctx) // coder reads pongs in Read
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := ws.Ping(pctx); err != nil {
			ws.Close(websocket.StatusInternalError, "no pong")
			return
		}
		ws.Close(websocket.StatusGoingAway, "bye")
	})
	c := dialT(t, url)
	_, _, err := c.Read(context.Background())
	var ce *CloseError
	if !errors.As(err, &ce) || ce.Code != StatusGoingAway || ce.Reason != "bye" {
		t.Fatalf("Read = %v, want the server's close 1001 bye (after its ping was answered)", err)
	}
	if err := c.Write(context.Background(), OpBinary, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after the close = %v, want ErrClosed", err)
	}
}

// TestClientClose: Close sends its code and reason, and the server's
// echo ends the handshake.
func TestClientClose(t *testing.T) {
	got := make(chan websocket.CloseError, 1)
	url := coderServer(t, func(ctx context.Context, ws *websocket.Conn, _ *http.Request) {
		_, _, err := ws.Read(ctx)
		var ce websocket.CloseError
		errors.As(err, &ce)
		got <- ce
	})
	c := dialT(t, url)
	start := time.Now()
	if err := c.Close(StatusPolicyViolation, "handshake failed"); err != nil {
		t.Fatal(err)
	}
	if ce := <-got; ce.Code != websocket.StatusPolicyViolation || ce.Reason != "handshake failed" {
		t.Errorf("server read close %d %q", ce.Code, ce.Reason)
	}
	if d := time.Since(start); d >= closeTimeout {
		t.Errorf("Close took %v: it did not see the server's echo", d)
	}
}

// TestRefusal: an answer other than 101 is a HandshakeError with the
// status, the Date header and the body.
func TestRefusal(t *testing.T) {
	url := coderServer(t, nil)
	_, err := Dial(context.Background(), url, nil)
	var he *HandshakeError
	if !errors.As(err, &he) || he.StatusCode != 401 || he.Status != "401 Unauthorized" ||
		string(he.Body) != "{\"error\":\"unauthorized\"}\n" || he.Header.Get("Date") != "Sun, 06 Nov 1994 08:49:37 GMT" {
		t.Fatalf("Dial = %v (%+v)", err, he)
	}
}

func TestDialBadURL(t *testing.T) {
	for _, u := range []string{"http://x", "ws://", "::"} {
		if _, err := Dial(context.Background(), u, nil); err == nil || !strings.Contains(err.Error(), "not a ws") {
			t.Errorf("Dial(%q) = %v", u, err)
		}
	}
}

// TestReadCancelled: a Read whose context ends returns the cause.
func TestReadCancelled(t *testing.T) {
	url := coderServer(t, func(ctx context.Context, ws *websocket.Conn, _ *http.Request) { ws.Read(ctx) })
	c := dialT(t, url)
	ctx, cancel := context.WithCancelCause(context.Background())
	go cancel(errors.New("link stopping"))
	if _, _, err := c.Read(ctx); err == nil || !strings.Contains(err.Error(), "link stopping") {
		t.Fatalf("Read = %v, want the context's cause", err)
	}
}

// TestAcceptKey is Section 1.3's example.
func TestAcceptKey(t *testing.T) {
	if got := AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Errorf("AcceptKey = %s", got)
	}
}

// rawServer answers the opening handshake with answer (given the
// request's key) and then runs script on the connection.
func rawServer(t *testing.T, answer func(key string) string, script func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln := nettest.Loopback(t)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		c.Write([]byte(answer(req.Header.Get("Sec-WebSocket-Key"))))
		if script != nil {
			script(c, br)
		}
	}()
	return "ws://" + ln.Addr().String() + "/link"
}

func upgraded(key string) string {
	return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + AcceptKey(key) + "\r\n\r\n"
}

func TestBadAnswers(t *testing.T) {
	tests := []struct {
		name   string
		answer func(key string) string
		want   string
	}{
		{"wrong accept", func(string) string { return upgraded("another key") }, "Sec-WebSocket-Accept"},
		{"no upgrade", func(k string) string { return strings.Replace(upgraded(k), "Upgrade: websocket\r\n", "", 1) }, "Upgrade"},
		{"connection", func(k string) string {
			return strings.Replace(upgraded(k), "Connection: Upgrade", "Connection: keep-alive", 1)
		}, "Connection"},
		{"extension", func(k string) string {
			return strings.Replace(upgraded(k), "\r\n\r\n", "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n", 1)
		}, "extension"},
		{"subprotocol", func(k string) string {
			return strings.Replace(upgraded(k), "\r\n\r\n", "\r\nSec-WebSocket-Protocol: other\r\n\r\n", 1)
		}, "subprotocol"},
		{"not http", func(string) string { return "SSH-2.0-x\r\n" }, "status line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Dial(context.Background(), rawServer(t, tt.answer, nil), &Options{Subprotocols: []string{"p.v2"}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Dial = %v, want an error about %s", err, tt.want)
			}
		})
	}
}

// TestDialTimeout: a server that never answers the handshake is given up
// at the context's deadline.
func TestDialTimeout(t *testing.T) {
	url := rawServer(t, func(string) string { return "" }, func(c net.Conn, br *bufio.Reader) { br.ReadByte() })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Dial(ctx, url, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial = %v, want the context's deadline", err)
	}
}
