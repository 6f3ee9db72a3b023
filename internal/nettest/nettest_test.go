package nettest

import (
	"io"
	"net"
	"testing"
)

// TestServeEachConnection: every connection to a Loopback listener is
// handed to Serve's handler, each on its own goroutine (the second is
// served while the first is still open).
func TestServeEachConnection(t *testing.T) {
	ln := Loopback(t)
	Serve(ln, func(c net.Conn) {
		defer c.Close()
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err == nil {
			c.Write(append(b, '!'))
		}
	})
	first, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	for _, c := range []net.Conn{second, first} {
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(c); err != nil || string(got) != "x!" {
			t.Errorf("answer %q, %v; want x!", got, err)
		}
	}
}
