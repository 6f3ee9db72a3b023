//go:build integration

package cluster

import (
	"net"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/internal/nettest"
)

// proxyMode is what a faultProxy does with the bytes it carries.
type proxyMode int

const (
	proxyPass      proxyMode = iota // forward both ways
	proxyBlackhole                  // keep every connection open and drop every byte, as a cut link without a reset
	proxyRefuse                     // reset every connection and every new one, as a host that is down
)

// faultProxy is a TCP proxy on loopback between one relay and one NATS
// server: the test partitions them by switching its mode.
type faultProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  proxyMode
	conns map[net.Conn]struct{}
}

// startProxy listens on a loopback port the kernel chooses and forwards
// each connection to target (host:port).
func startProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	p := &faultProxy{ln: nettest.Loopback(t), target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(p.close)
	nettest.Serve(p.ln, p.serve)
	return p
}

// url is the proxy's address as a NATS URL.
func (p *faultProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *faultProxy) serve(c net.Conn) {
	if !p.track(c) {
		return
	}
	if p.setting() == proxyBlackhole {
		p.pipe(c, nil) // never reaches the server
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(s) {
		p.reset(c)
		return
	}
	go p.pipe(s, c)
	p.pipe(c, s)
}

// track adds c to the connections a refusal resets; when the proxy
// refuses it resets c at once and returns false.
func (p *faultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == proxyRefuse || p.conns == nil {
		go p.reset(c)
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// pipe copies from src to dst (nil: nowhere) until src fails, dropping
// what it reads while the proxy blackholes; then it resets both.
func (p *faultProxy) pipe(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			break
		}
		if dst == nil || p.setting() == proxyBlackhole {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			break
		}
	}
	p.reset(src)
	if dst != nil {
		p.reset(dst)
	}
}

// reset closes c with a TCP reset (SO_LINGER 0), as a dead peer's kernel
// answers.
func (p *faultProxy) reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *faultProxy) setting() proxyMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// set switches the proxy's mode; proxyRefuse resets every connection it
// holds.
func (p *faultProxy) set(m proxyMode) {
	p.mu.Lock()
	p.mode = m
	var open []net.Conn
	if m == proxyRefuse {
		for c := range p.conns {
			open = append(open, c)
		}
	}
	p.mu.Unlock()
	for _, c := range open {
		p.reset(c)
	}
}

func (p *faultProxy) close() {
	p.ln.Close()
	p.set(proxyRefuse)
	p.mu.Lock()
	p.conns = nil
	p.mu.Unlock()
}
