//go:build integration

package hostile

import (
	"bufio"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/nettest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// The device's link against a hostile relay, with the real torpor-agent.
// Socket deadlines run on real time: the waits below are bounded waits for
// a real process.

// trickler is a hostile relay on loopback: it reads a link's upgrade
// request and answers a 101 one byte every interval, for ever. Each
// accepted connection reports, on closed, how long it was held before the
// device closed it.
type trickler struct {
	ln     net.Listener
	closed chan time.Duration
}

func newTrickler(t *testing.T, interval time.Duration) *trickler {
	t.Helper()
	tr := &trickler{ln: nettest.Loopback(t), closed: make(chan time.Duration, 16)}
	nettest.Serve(tr.ln, func(c net.Conn) { tr.serve(c, interval) })
	return tr
}

func (tr *trickler) serve(c net.Conn, interval time.Duration) {
	defer c.Close()
	start := time.Now()
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if line == "\r\n" {
			break
		}
	}
	answer := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Slow: " + strings.Repeat("a", 1<<20)
	for i := 0; i < len(answer); i++ {
		if _, err := c.Write([]byte{answer[i]}); err != nil {
			break
		}
		time.Sleep(interval)
	}
	select {
	case tr.closed <- time.Since(start):
	default:
	}
}

var unreachableRE = regexp.MustCompile(`msg="relay unreachable"`)

// TestAgentLinkHandshakeDeadline: a relay trickling its 101 one byte a
// second holds the device's link attempt for link.HandshakeTimeout, not
// the device's window: the agent gives up on that connection, logs why
// and tries again.
func TestAgentLinkHandshakeDeadline(t *testing.T) {
	tr := newTrickler(t, time.Second)
	args := []string{"--key", testenv.KeyFile(t, key(t, 0x11)), "--data-dir", t.TempDir(), "--relay", "http://" + tr.ln.Addr().String(),
		"--mode", "always_on", "--name", "hostile", "--purposes", "comms:*", "--handler", "*=exec:/bin/true"}
	p := testenv.Start(t, testenv.Binary(t, "torpor-agent"), args...)
	const limit = 15 * time.Second // link.HandshakeTimeout (10 s) and the trickler's noticing

	select {
	case held := <-tr.closed:
		if held > limit {
			t.Fatalf("the trickled handshake held the link attempt %v, want at most %v", held, limit)
		}
	case <-time.After(2 * limit):
		t.Fatalf("the trickled handshake still held the link attempt after %v; agent log:\n%s", 2*limit, p.Log())
	}
	lines := p.WaitWithin(t, 10*time.Second, unreachableRE, "handshake within")
	if len(lines) == 0 {
		t.Fatalf("no reason logged; agent log:\n%s", p.Log())
	}
}
