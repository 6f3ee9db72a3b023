package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/nettest"
	"github.com/torpor-dev/torpor/internal/syncbuf"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// stallProxy carries one TCP connection to target until stall is called;
// from then on it carries nothing until release is closed: a device that
// went silent mid-link (out of coverage, power gone).
type stallProxy struct {
	addr    string
	stalled chan struct{}
	once    sync.Once
}

func newStallProxy(t *testing.T, target string, release <-chan struct{}) *stallProxy {
	t.Helper()
	ln := nettest.Loopback(t)
	p := &stallProxy{addr: ln.Addr().String(), stalled: make(chan struct{})}
	go func() {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", target)
		if err != nil {
			in.Close()
			return
		}
		t.Cleanup(func() { in.Close(); out.Close() })
		go p.pipe(out, in, release)
		p.pipe(in, out, release)
	}()
	return p
}

func (p *stallProxy) stall() { p.once.Do(func() { close(p.stalled) }) }

// pipe copies src to dst, holding every read back while stalled and not
// yet released.
func (p *stallProxy) pipe(dst io.Writer, src io.Reader, release <-chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.stalled:
			<-release
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestCloseDoesNotWaitLinkByLink: the relay's stop closes every link at
// once. Four devices have gone silent (their close handshake can only
// time out); the live device's link is closed while theirs still wait,
// and its link down line says the relay closed it.
// Closed one after another, the live one waited up to 5 s behind each
// silent one before it (bug: a relay's stop took seconds per silent link).
func TestCloseDoesNotWaitLinkByLink(t *testing.T) {
	h := newHarness(t)
	var log syncbuf.Buffer
	h.srv.Logger = slog.New(slog.NewTextHandler(&log, nil))
	release := make(chan struct{})
	var silent []string
	for i := range 4 {
		p := newStallProxy(t, h.http.Listener.Addr().String(), release)
		key := didtest.Key(t, byte(10+i))
		c, err := link.Dial(context.Background(), link.Config{RelayURL: "http://" + p.addr, Audience: h.http.URL, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		<-h.agents.events // linked
		p.stall()
		silent = append(silent, key.DID().String())
	}
	liveKey := didtest.Key(t, 20)
	live := h.dial(t, liveKey, nil)
	closed := make(chan struct{})
	go func() { h.srv.Close(); close(closed) }()
	<-live.Done()
	got := log.String()
	close(release)
	<-closed
	for range 5 {
		<-h.agents.events // unlinked: each link down line is logged
	}
	if want := `msg="link down" agent=` + liveKey.DID().String() + " closedBy=relay"; !strings.Contains(log.String(), want) {
		t.Errorf("relay log after its stop:\n%s\nwant %s", log.String(), want)
	}
	for _, d := range silent {
		if strings.Contains(got, `msg="link down" agent=`+d) {
			t.Fatalf("the live device's link was closed after a silent device's close had finished:\n%s", got)
		}
	}
}

// TestLastStateOfALeavingDeviceIsKept: a device that stops sends its last
// state (its next wake) and closes its link without waiting for the
// answer. The relay stores that state all the same, and logs the answer
// it could not give as the device's leaving, not as its own failure
// (before: the store's context was the link's, cancelled by the close:
// the state was lost and an ERROR logged at every agent's stop).
func TestLastStateOfALeavingDeviceIsKept(t *testing.T) {
	h := newHarness(t)
	var log syncbuf.Buffer
	h.srv.Logger = slog.New(slog.NewTextHandler(&log, nil))
	h.agents.publishing, h.agents.release = make(chan context.Context, 1), make(chan struct{})
	dev := didtest.Key(t, 30)
	c := h.dial(t, dev, nil)
	sent, stop := context.WithCancel(context.Background())
	go c.Publish(sent, wire.State{Mode: "sleep", NextWake: 1768478400})
	ctx := <-h.agents.publishing // the relay is storing it
	stop()
	c.Close()
	<-c.Done()
	// The relay's side saw the close once a forward finds no link.
	for {
		_, err := h.srv.Forward(context.Background(), dev.DID().String(), wire.Request{Body: []byte(`{}`)})
		if errors.Is(err, ErrNotLinked) {
			break
		}
		runtime.Gosched()
	}
	if err := ctx.Err(); err != nil {
		t.Errorf("the state's store context ended with the link: %v", err)
	}
	close(h.agents.release)
	<-h.agents.events // unlinked
	h.agents.mu.Lock()
	n := len(h.agents.states)
	h.agents.mu.Unlock()
	if n != 1 {
		t.Errorf("%d states stored; want the leaving device's last one", n)
	}
	if got := log.String(); strings.Contains(got, "level=ERROR") {
		t.Errorf("relay log:\n%s\nwant no ERROR for a device that left", got)
	}
}
