package wsclient

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/torpor-dev/torpor/internal/nettest"
)

func TestProxyFor(t *testing.T) {
	tests := []struct {
		target string
		env    map[string]string
		want   string // "" for direct, "error" for an error
	}{
		{"wss://relay.example/link", map[string]string{"HTTPS_PROXY": "http://p:3128"}, "http://p:3128"},
		{"wss://relay.example/link", map[string]string{"https_proxy": "p:3128"}, "http://p:3128"},
		{"wss://relay.example/link", map[string]string{"HTTPS_PROXY": "https://u:pw@p", "https_proxy": "http://other"}, "https://u:pw@p"},
		{"wss://relay.example/link", map[string]string{"HTTP_PROXY": "http://p"}, ""},
		{"ws://relay.example/link", map[string]string{"HTTP_PROXY": "http://p"}, "http://p"},
		{"ws://relay.example/link", map[string]string{"HTTP_PROXY": "http://p", "REQUEST_METHOD": "GET"}, ""},
		{"wss://localhost:8443/link", map[string]string{"HTTPS_PROXY": "http://p"}, ""},
		{"wss://127.0.0.2/link", map[string]string{"HTTPS_PROXY": "http://p"}, ""},
		{"wss://[::1]/link", map[string]string{"HTTPS_PROXY": "http://p"}, ""},
		{"wss://relay.example/link", map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": "*"}, ""},
		{"wss://relay.example/link", map[string]string{"HTTPS_PROXY": "http://p", "no_proxy": "other.example, relay.example"}, ""},
		{"wss://a.relay.example/link", map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": "relay.example"}, ""},
		{"wss://relay.example/link", map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": ".relay.example"}, "http://p"},
		{"wss://a.relay.example/link", map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": "*.relay.example"}, ""},
		{"wss://notrelay.example/link", map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": "relay.example"}, "http://p"},
		{"wss://relay.example/link", map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": "relay.example:8443"}, "http://p"},
		{"wss://relay.example:8443/link", map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": "relay.example:8443"}, ""},
		{"wss://10.1.2.3/link", map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": "10.0.0.0/8"}, ""},
		{"wss://10.1.2.3/link", map[string]string{"HTTPS_PROXY": "http://p", "NO_PROXY": "10.1.2.4"}, "http://p"},
		{"wss://relay.example/link", map[string]string{"HTTPS_PROXY": "socks5://p:1080"}, "error"},
		{"wss://relay.example/link", nil, ""},
	}
	for _, tt := range tests {
		target, _ := url.Parse(tt.target)
		p, err := proxyFor(target, func(k string) string { return tt.env[k] })
		got := ""
		if err != nil {
			got = "error"
		} else if p != nil {
			got = p.String()
		}
		if got != tt.want {
			t.Errorf("%s with %v: proxy %q (%v), want %q", tt.target, tt.env, got, err, tt.want)
		}
	}
}

// connectProxy runs an HTTP proxy that tunnels CONNECT requests carrying
// the credentials u:pw, and answers 407 to others.
func connectProxy(t *testing.T) string {
	t.Helper()
	ln := nettest.Loopback(t)
	nettest.Serve(ln, tunnel)
	return ln.Addr().String()
}

func tunnel(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != "CONNECT" || req.Header.Get("Proxy-Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("u:pw")) {
		io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", req.Host)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	go io.Copy(up, br)
	io.Copy(c, up)
}

// TestThroughProxy reaches coder/websocket's server through a CONNECT
// proxy with credentials; wrong credentials are refused without the
// password in the error.
func TestThroughProxy(t *testing.T) {
	target := coderServer(t, func(ctx context.Context, ws *websocket.Conn, _ *http.Request) {
		typ, b, err := ws.Read(ctx)
		if err == nil {
			ws.Write(ctx, typ, b)
		}
	})
	proxy := connectProxy(t)
	via := func(raw string) func(*url.URL) (*url.URL, error) {
		return func(*url.URL) (*url.URL, error) { return url.Parse(raw) }
	}
	c, err := Dial(context.Background(), target, &Options{Proxy: via("http://u:pw@" + proxy), Header: authT})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(StatusNormalClosure, "")
	c.Write(context.Background(), OpBinary, []byte("tunnelled"))
	if _, b, err := c.Read(context.Background()); err != nil || string(b) != "tunnelled" {
		t.Fatalf("Read through the proxy = %q, %v", b, err)
	}
	_, err = Dial(context.Background(), target, &Options{Proxy: via("http://u:secret@" + proxy), Header: authT})
	if err == nil || !strings.Contains(err.Error(), "407") || strings.Contains(err.Error(), "secret") {
		t.Errorf("Dial with wrong proxy credentials = %v, want a 407 without the password", err)
	}
}
