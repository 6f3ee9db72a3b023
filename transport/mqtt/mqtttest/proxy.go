package mqtttest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/torpor-dev/torpor/internal/nettest"
	"github.com/torpor-dev/torpor/internal/syncbuf"
)

// Proxy is a TCP proxy on loopback that a test can cut, to partition a
// client from its broker without stopping the broker. It forwards any TCP
// protocol and counts the bytes passed each way.
type Proxy struct {
	ln     net.Listener
	target string
	// up and down count the bytes passed from clients to the target and
	// back, over every connection.
	up, down atomic.Int64

	mu sync.Mutex
	// mu guards all following fields.
	cut   bool
	conns map[net.Conn]bool
	// sent holds, per proxied connection in the order they were
	// accepted, the bytes the client sent to the broker.
	sent []*syncbuf.Buffer
}

// Sent returns, for each connection the proxy forwarded so far, the bytes
// its client sent to the broker: the MQTT packets as they went on the
// wire, for tests that check what a client really sends.
func (p *Proxy) Sent() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([][]byte, len(p.sent))
	for i, b := range p.sent {
		out[i] = b.Bytes()
	}
	return out
}

// StartProxy forwards a fresh loopback port to target (host:port) until
// the end of the test.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{ln: nettest.Loopback(t), target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(p.Cut) // before the listener closes
	nettest.Serve(p.ln, p.forward)
	return p
}

// URL is the proxy's mqtt:// URL.
func (p *Proxy) URL() string { return "mqtt://" + p.ln.Addr().String() }

// Addr is the proxy's host:port, for a protocol other than MQTT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Bytes returns the bytes passed so far over every connection, from the
// clients to the target (up) and back (down).
func (p *Proxy) Bytes() (up, down int64) { return p.up.Load(), p.down.Load() }

// counter adds what it writes to n.
type counter struct {
	w io.Writer
	n *atomic.Int64
}

func (c counter) Write(b []byte) (int, error) {
	k, err := c.w.Write(b)
	c.n.Add(int64(k))
	return k, err
}

// Cut closes every proxied connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *Proxy) forward(c net.Conn) {
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	rec, ok := p.track(c, up)
	if !ok {
		return
	}
	go func() {
		io.Copy(io.MultiWriter(counter{up, &p.up}, rec), c)
		up.Close()
	}()
	io.Copy(counter{c, &p.down}, up)
	c.Close()
}

// track registers a proxied pair and returns the buffer that records what
// its client sends, or closes the pair when the proxy was cut meanwhile.
func (p *Proxy) track(c, up net.Conn) (*syncbuf.Buffer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		c.Close()
		up.Close()
		return nil, false
	}
	p.conns[c], p.conns[up] = true, true
	rec := new(syncbuf.Buffer)
	p.sent = append(p.sent, rec)
	return rec, true
}
