package wsclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWSS dials coder/websocket's server over TLS: the server's name is
// sent for SNI and verified against the roots given, and a server the
// roots do not vouch for is refused (the system roots do not hold
// httptest's certificate).
func TestWSS(t *testing.T) {
	sni := make(chan string, 2)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		typ, b, err := ws.Read(r.Context())
		if err == nil {
			ws.Write(r.Context(), typ, b)
		}
	}))
	srv.TLS = &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sni <- h.ServerName
		return nil, nil
	}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	toServer := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	// httptest's certificate names example.com.
	c, err := Dial(context.Background(), "wss://example.com:"+port+"/link", &Options{TLSConfig: &tls.Config{RootCAs: roots}, NetDial: toServer})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(StatusNormalClosure, "")
	if got := <-sni; got != "example.com" {
		t.Errorf("SNI %q, want example.com", got)
	}
	if err := c.Write(context.Background(), OpBinary, []byte("over tls")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(context.Background()); err != nil || string(b) != "over tls" {
		t.Fatalf("Read = %q, %v", b, err)
	}
	_, err = Dial(context.Background(), "wss://example.com:"+port+"/link", &Options{NetDial: toServer})
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("Dial with the system roots = %v, want an unknown authority", err)
	}
}

// TestWriteCancelled: a Write the server does not drain ends with the
// context's cause when the context ends, and the connection is closed.
func TestWriteCancelled(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	url := rawServer(t, upgraded, func(net.Conn, *bufio.Reader) { <-hold }) // reads nothing
	c, err := Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = c.Write(ctx, OpBinary, make([]byte, 16<<20))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write = %v, want the context's deadline", err)
	}
	if err := c.Write(context.Background(), OpBinary, []byte("x")); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Write after a broken write = %v, want ErrClosed", err)
	}
}
