package jsstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/nettest"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// TestEnqueueWhoseAnswerIsLost holds the server's answers while an
// enqueue is in flight: the server stores the record, the relay never
// hears so. Enqueue must not report a refusal (the relay would answer
// "nothing was queued" for a record the device then gets) but
// queue.ErrUnconfirmed; once the answers flow again, the record is in the
// queue.
func TestEnqueueWhoseAnswerIsLost(t *testing.T) {
	srv := single(t)
	p := startHoldProxy(t, strings.TrimPrefix(srv.URL(), "nats://"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := jsstore.Open(ctx, jsstore.Config{URLs: []string{"nats://" + p.addr()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q := c.Queue()
	defer q.Close()
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	b := queuebounds.Default()
	rec := func(body string) queue.Record {
		return queue.Record{Agent: "did:key:z6MkAgent", From: "did:key:z6MkSender", Body: []byte(body)}
	}
	if _, err := q.Enqueue(ctx, rec("first"), b, now); err != nil {
		t.Fatal(err)
	}

	p.hold(true)
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = q.Enqueue(short, rec("lost answer"), b, now)
	cancelShort()
	if !errors.Is(err, queue.ErrUnconfirmed) {
		t.Errorf("Enqueue whose answer was held: %v; want queue.ErrUnconfirmed", err)
	}
	p.hold(false)

	recs, err := q.Next(ctx, "did:key:z6MkAgent", 0, 10, now)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Body))
	}
	if strings.Join(got, ",") != "first,lost answer" {
		t.Errorf("queue holds %q; want the record whose answer was lost stored after the first", got)
	}
	if _, err := q.Enqueue(ctx, rec("after"), b, now); err != nil {
		t.Errorf("Enqueue after the answers flow again: %v", err)
	}
}

// holdProxy forwards TCP between a client and one server on loopback;
// while held, the server's bytes wait in the proxy (the client hears
// nothing, as behind a stalled link) and flow again, in order, when
// released.
type holdProxy struct {
	ln     net.Listener
	target string

	mu   sync.Mutex
	cond *sync.Cond
	held bool
}

func startHoldProxy(t *testing.T, target string) *holdProxy {
	t.Helper()
	p := &holdProxy{ln: nettest.Loopback(t), target: target}
	p.cond = sync.NewCond(&p.mu)
	t.Cleanup(func() { p.hold(false) })
	nettest.Serve(p.ln, p.serve)
	return p
}

func (p *holdProxy) addr() string { return p.ln.Addr().String() }

func (p *holdProxy) hold(on bool) {
	p.mu.Lock()
	p.held = on
	p.mu.Unlock()
	p.cond.Broadcast()
}

// serve forwards the client's connection c to the server.
func (p *holdProxy) serve(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	go func() { io.Copy(s, c); s.Close() }()
	p.answers(c, s)
	c.Close()
}

// answers copies the server's bytes to the client, waiting while held.
func (p *holdProxy) answers(c, s net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		p.mu.Lock()
		for p.held {
			p.cond.Wait()
		}
		p.mu.Unlock()
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
