package mqtttest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/nettest"
)

// FaultProxy is a TCP proxy on loopback that injects a network's faults
// between a client and its broker: it drops its connections (both ends
// see them close), delays what it forwards, stalls them (a half-open
// connection: nothing more is forwarded either way and nothing is closed,
// as when a NAT forgets a flow; the client finds out by its keep-alive),
// and refuses new connections while partitioned.
type FaultProxy struct {
	ln     net.Listener
	target string

	mu sync.Mutex
	// mu guards all following fields.
	delay     time.Duration
	refuse    bool
	pairs     map[*faultPair]bool
	accepted  int           // connections forwarded so far
	acceptsCh chan struct{} // closed at the next one
}

// faultPair is one proxied connection: the client's and the broker's.
type faultPair struct {
	client, broker net.Conn
	stalled        bool // under FaultProxy.mu
	once           sync.Once
}

func (fp *faultPair) close() {
	fp.once.Do(func() {
		fp.client.Close()
		fp.broker.Close()
	})
}

// StartFaultProxy forwards a fresh loopback port to target (host:port)
// until the end of the test.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	p := &FaultProxy{ln: nettest.Loopback(t), target: target, pairs: map[*faultPair]bool{}, acceptsCh: make(chan struct{})}
	t.Cleanup(p.Drop) // before the listener closes
	nettest.Serve(p.ln, p.serve)
	return p
}

// URL is the proxy's mqtt:// URL.
func (p *FaultProxy) URL() string { return "mqtt://" + p.ln.Addr().String() }

// serve forwards the client's connection c to the broker, unless the
// proxy refuses connections.
func (p *FaultProxy) serve(c net.Conn) {
	p.mu.Lock()
	refuse := p.refuse
	p.mu.Unlock()
	if refuse {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	fp := &faultPair{client: c, broker: up}
	p.mu.Lock()
	p.pairs[fp] = true
	p.accepted++
	close(p.acceptsCh)
	p.acceptsCh = make(chan struct{})
	p.mu.Unlock()
	go p.pump(fp, c, up, true)
	go p.pump(fp, up, c, false)
}

// pump copies src to dst, after the proxy's delay, until src fails. A
// stalled pair's bytes are dropped; the end of its broker's side is not
// passed on to the client, who must find the connection dead itself.
func (p *FaultProxy) pump(fp *faultPair, src, dst net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		delay, stalled := p.delay, fp.stalled
		p.mu.Unlock()
		if n > 0 && !stalled {
			if delay > 0 {
				time.Sleep(delay) // the network's latency, not a wait for an event
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			if fromClient || !stalled {
				p.forget(fp)
			}
			return
		}
	}
}

func (p *FaultProxy) forget(fp *faultPair) {
	fp.close()
	p.mu.Lock()
	delete(p.pairs, fp)
	p.mu.Unlock()
}

// Drop closes every connection the proxy forwards.
func (p *FaultProxy) Drop() {
	p.mu.Lock()
	pairs := p.pairs
	p.pairs = map[*faultPair]bool{}
	p.mu.Unlock()
	for fp := range pairs {
		fp.close()
	}
}

// Stall stops forwarding on every current connection, in both
// directions, without closing any; later connections are forwarded.
func (p *FaultProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for fp := range p.pairs {
		fp.stalled = true
	}
}

// SetDelay delays each piece forwarded, either way, by d from now on.
func (p *FaultProxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Partition drops every connection and refuses new ones while on.
func (p *FaultProxy) Partition(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
	if on {
		p.Drop()
	}
}

// Accepted is the number of connections forwarded so far.
func (p *FaultProxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// AwaitAccepted waits until the proxy has forwarded n connections in all,
// or ctx ends.
func (p *FaultProxy) AwaitAccepted(ctx context.Context, n int) error {
	for {
		p.mu.Lock()
		got, ch := p.accepted, p.acceptsCh
		p.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
