// Package nettest holds what tests need of the network around the code
// they test: a loopback listener closed when the test ends, and a loop
// that serves each of its connections. Only tests import it.
package nettest

import (
	"net"
	"testing"
)

// Loopback listens on a TCP port of 127.0.0.1 that the kernel chooses;
// the listener is closed when the test ends.
func Loopback(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	return ln
}

// Serve accepts connections on ln until it is closed and runs handle on
// each, on a goroutine of its own. It returns at once.
func Serve(ln net.Listener, handle func(net.Conn)) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
}
