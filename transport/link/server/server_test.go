package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/syncbuf"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// fakeAgents records what the link tells the relay's agent state.
type fakeAgents struct {
	mu     sync.Mutex
	states []wire.State
	linked map[string]bool
	refuse error
	events chan string
	// publishing, when set, gets each Publish's context, and Publish then
	// waits for release before it stores the state, failing as a store
	// does when the context ended meanwhile.
	publishing chan context.Context
	release    chan struct{}
}

func (a *fakeAgents) Admit(ctx context.Context, agent did.DID) (queuebounds.Bounds, error) {
	if a.refuse != nil {
		return queuebounds.Bounds{}, a.refuse
	}
	return queuebounds.Bounds{MaxMessages: 500, MaxPerPeer: 50, MaxBytes: 2 << 20, MaxMessageSize: 256 << 10, TTL: 7 * 24 * time.Hour}, nil
}

// Publish holds the KeyPackages of the last state published (none for
// a state without), and assigns an hourly_wake window's device the
// second of its minute equal to the minute.
func (a *fakeAgents) Publish(ctx context.Context, agent did.DID, st wire.State) (wire.Accepted, error) {
	if st.Mode == "nap" {
		return wire.Accepted{}, errors.New("unknown mode nap")
	}
	if a.publishing != nil {
		a.publishing <- ctx
		<-a.release
		if err := ctx.Err(); err != nil {
			return wire.Accepted{}, err
		}
	}
	a.mu.Lock()
	a.states = append(a.states, st)
	a.mu.Unlock()
	held := &wire.Held{}
	for _, kp := range st.KeyPackages {
		held.Digests = append(held.Digests, wire.KeyPackageDigest(kp))
	}
	ok := wire.Accepted{Bounds: queuebounds.Bounds{MaxMessages: 7}, Held: held}
	if st.Mode == "hourly_wake" && st.Window != nil {
		sec := st.Window.Minute
		ok.WakeSecond = &sec
	}
	return ok, nil
}

func (a *fakeAgents) Linked(agent did.DID, up bool) {
	a.mu.Lock()
	if a.linked == nil {
		a.linked = map[string]bool{}
	}
	a.linked[agent.String()] = up
	a.mu.Unlock()
	if a.events != nil {
		a.events <- fmt.Sprintf("%v", up)
	}
}

type harness struct {
	srv    *Server
	http   *httptest.Server
	q      *queue.Bolt
	agents *fakeAgents

	mu sync.Mutex
	// mu guards all following fields.
	tokens []string // the Authorization header of every upgrade request, in order
}

func newHarness(tb testing.TB) *harness {
	tb.Helper()
	q, err := queue.OpenBolt(filepath.Join(tb.TempDir(), "q.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	h := &harness{q: q, agents: &fakeAgents{events: make(chan string, 16)}}
	h.srv = &Server{Queue: q, Agents: h.agents}
	h.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.tokens = append(h.tokens, r.Header.Get("Authorization"))
		h.mu.Unlock()
		h.srv.ServeHTTP(w, r)
	}))
	h.srv.Verifier = &bearer.Verifier{Audience: h.http.URL}
	tb.Cleanup(func() {
		h.srv.Close()
		h.http.Close()
		q.Close()
	})
	return h
}

func (h *harness) dial(tb testing.TB, key *did.PrivateKey, handler link.HandlerFunc) *link.Client {
	tb.Helper()
	c, err := link.Dial(context.Background(), link.Config{RelayURL: h.http.URL, Key: key, Handler: handler})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	<-h.agents.events // linked
	return c
}

func (h *harness) enqueue(tb testing.TB, agent did.DID, n int) {
	tb.Helper()
	for i := range n {
		_, err := h.q.Enqueue(context.Background(), queue.Record{Agent: agent.String(), From: "did:key:zSender", Body: fmt.Appendf(nil, "body-%d", i)}, queuebounds.Default(), time.Now())
		if err != nil {
			tb.Fatal(err)
		}
	}
}

func TestDrainInOrderInBatches(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	h.enqueue(t, dev.DID(), 25)
	c := h.dial(t, dev, nil)
	if got := c.Hello().MaxMessages; got != 500 {
		t.Errorf("hello bounds MaxMessages = %d, want 500", got)
	}
	var bodies []string
	var batches []int
	n, err := c.Drain(context.Background(), 10, func(ctx context.Context, recs []wire.Record) error {
		batches = append(batches, len(recs))
		for _, r := range recs {
			bodies = append(bodies, string(r.Body))
			if r.From != "did:key:zSender" || r.ExpiresAt <= r.EnqueuedAt {
				t.Errorf("record %d: from %q, enq %d exp %d", r.Seq, r.From, r.EnqueuedAt, r.ExpiresAt)
			}
		}
		return nil
	})
	if err != nil || n != 25 {
		t.Fatalf("Drain = %d, %v; want 25, nil", n, err)
	}
	var want []string
	for i := range 25 {
		want = append(want, fmt.Sprintf("body-%d", i))
	}
	if diff := cmp.Diff(want, bodies); diff != "" {
		t.Errorf("drained bodies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{10, 10, 5}, batches); diff != "" {
		t.Errorf("batch sizes (-want +got):\n%s", diff)
	}
	st, _ := h.q.Stats(context.Background(), dev.DID().String(), time.Now())
	if st.Messages != 0 {
		t.Errorf("after drain, %d records left", st.Messages)
	}
}

func TestUnackedRecordsAreRedelivered(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	h.enqueue(t, dev.DID(), 5)
	c := h.dial(t, dev, nil)
	recs, more, err := c.Pull(context.Background(), 0, 10)
	if err != nil || len(recs) != 5 || more {
		t.Fatalf("Pull = %d records, more %v, %v", len(recs), more, err)
	}
	if err := c.Ack(context.Background(), []uint64{recs[0].Seq, recs[1].Seq}); err != nil {
		t.Fatal(err)
	}
	// A failing batch is not acknowledged.
	if _, err := c.Drain(context.Background(), 2, func(context.Context, []wire.Record) error { return errors.New("device busy") }); err == nil {
		t.Fatal("Drain with a failing fn: no error")
	}
	c.Close()
	<-h.agents.events // down

	c2 := h.dial(t, dev, nil)
	recs2, _, err := c2.Pull(context.Background(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, r := range recs2 {
		got = append(got, r.Seq)
	}
	want := []uint64{recs[2].Seq, recs[3].Seq, recs[4].Seq}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("redelivered seqs (-want +got):\n%s", diff)
	}
}

func TestLiveRequest(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	if _, err := h.srv.Forward(context.Background(), dev.DID().String(), wire.Request{}); !errors.Is(err, ErrNotLinked) {
		t.Fatalf("Forward before link = %v, want ErrNotLinked", err)
	}
	h.dial(t, dev, func(ctx context.Context, req wire.Request) wire.Response {
		return wire.Response{Status: 200, ContentType: "application/json", Body: fmt.Appendf(nil, `{"from":%q,"ver":%q,"echo":%s}`, req.From, req.Version, req.Body)}
	})
	if !h.srv.Up(dev.DID().String()) {
		t.Fatal("Up = false after link.Dial")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := h.srv.Forward(context.Background(), dev.DID().String(), wire.Request{From: "did:key:zA", Version: "1.0", Body: fmt.Appendf(nil, "%d", i)})
			want := fmt.Sprintf(`{"from":"did:key:zA","ver":"1.0","echo":%d}`, i)
			if err != nil || resp.Status != 200 || string(resp.Body) != want {
				t.Errorf("Forward %d = %+v, %v; want body %s", i, resp, err, want)
			}
		}()
	}
	wg.Wait()
}

func TestForwardUnansweredWhenLinkDrops(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	got := make(chan struct{})
	c := h.dial(t, dev, func(ctx context.Context, req wire.Request) wire.Response {
		close(got)
		<-ctx.Done()
		return wire.Response{}
	})
	errc := make(chan error, 1)
	go func() {
		_, err := h.srv.Forward(context.Background(), dev.DID().String(), wire.Request{Body: []byte("x")})
		errc <- err
	}()
	<-got
	c.Close()
	if err := <-errc; !errors.Is(err, ErrUnanswered) {
		t.Errorf("Forward across a dropped link = %v, want ErrUnanswered", err)
	}
}

func TestPublishState(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	c := h.dial(t, dev, nil)
	st := wire.State{Mode: "hourly_wake", Window: &wire.Window{Minute: 11, LengthSec: 300}, NextWake: 1768478400, Card: []byte(`{"name":"x"}`), KeyPackages: [][]byte{{0, 1, 0, 5}}, Pulse: []byte("p")}
	b, err := c.Publish(context.Background(), st)
	if err != nil || b.Bounds.MaxMessages != 7 || b.WakeSecond == nil || *b.WakeSecond != 11 {
		t.Fatalf("Publish = %+v, %v; want bounds and wake second 11", b, err)
	}
	if want := wire.KeyPackageDigest([]byte{0, 1, 0, 5}); b.Held == nil || len(b.Held.Digests) != 1 || !bytes.Equal(b.Held.Digests[0], want) {
		t.Errorf("wire.Held = %+v, want the digest %x", b.Held, want)
	}
	// A relay that holds none says so: wire.Held is set, with no digests.
	if b, err := c.Publish(context.Background(), wire.State{Mode: "sleep"}); err != nil || b.Held == nil || len(b.Held.Digests) != 0 || b.WakeSecond != nil {
		t.Errorf("Publish without KeyPackages = %+v, %v; want an empty Held", b, err)
	}
	h.agents.mu.Lock()
	gotState := h.agents.states[0]
	h.agents.mu.Unlock()
	if diff := cmp.Diff(st, gotState); diff != "" {
		t.Errorf("published state (-sent +received):\n%s", diff)
	}
	// A wake second outside 0-59 is the relay's protocol error.
	if _, err := c.Publish(context.Background(), wire.State{Mode: "hourly_wake", Window: &wire.Window{Minute: 75}}); !errors.Is(err, wire.ErrProtocol) {
		t.Errorf("state-ok assigning second 75: Publish = %v, want wire.ErrProtocol", err)
	}
	_, err = c.Publish(context.Background(), wire.State{Mode: "nap"})
	var re *wire.RemoteError
	if !errors.As(err, &re) || re.Code != "bad-state" || !strings.Contains(re.Message, "nap") {
		t.Errorf("Publish(bad mode) = %v, want a bad-state RemoteError", err)
	}
}

func TestQueuedNotification(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	c := h.dial(t, dev, nil)
	h.srv.Notify(dev.DID().String(), 42)
	if got := <-c.Queued(); got != 42 {
		t.Errorf("Queued() = %d, want 42", got)
	}
}

func TestDialRefusals(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	tests := []struct {
		name string
		cfg  link.Config
		want string
	}{
		{"wrong audience", link.Config{RelayURL: h.http.URL, Key: dev, Audience: "https://elsewhere.example"}, "401"},
		{"bad url", link.Config{RelayURL: "ftp://x", Key: dev}, "not an http(s) URL"},
		{"no key", link.Config{RelayURL: h.http.URL}, "needs a key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := link.Dial(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("link.Dial = %v, want error containing %q", err, tt.want)
			}
		})
	}
	h.agents.refuse = errors.New("agent not on the allow list")
	_, err := link.Dial(context.Background(), link.Config{RelayURL: h.http.URL, Key: dev})
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "allow list") {
		t.Errorf("link.Dial of a refused agent = %v, want 403", err)
	}
}

func TestNewerLinkReplacesOlder(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	c1 := h.dial(t, dev, nil)
	c2, err := link.Dial(context.Background(), link.Config{RelayURL: h.http.URL, Key: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	<-c1.Done()
	if c1.Err() == nil {
		t.Error("old link closed without an error")
	}
	if _, _, err := c2.Pull(context.Background(), 0, 1); err != nil {
		t.Errorf("newer link: Pull = %v", err)
	}
	if !h.srv.Up(dev.DID().String()) {
		t.Error("agent not up after the replacement")
	}
	h.agents.mu.Lock()
	up := h.agents.linked[dev.DID().String()]
	h.agents.mu.Unlock()
	if !up || len(h.agents.events) != 0 {
		t.Errorf("Linked events after a replacement: up=%v, %d more events; want up and none", up, len(h.agents.events))
	}
}

// TestGone: Gone is closed at once for an agent without a link, stays open
// while the link is up, and closes when the device's close reaches the
// relay (Up is false by then) or a newer link replaces the old one.
func TestGone(t *testing.T) {
	h := newHarness(t)
	dev := didtest.Key(t, 1)
	agent := dev.DID().String()
	if !closed(h.srv.Gone(agent)) {
		t.Fatal("Gone is open for an agent that never linked")
	}
	c1 := h.dial(t, dev, nil)
	gone1 := h.srv.Gone(agent)
	if closed(gone1) {
		t.Fatal("Gone is closed while the link is up")
	}
	c2, err := link.Dial(context.Background(), link.Config{RelayURL: h.http.URL, Key: dev})
	if err != nil {
		t.Fatal(err)
	}
	<-c1.Done()
	<-gone1 // replaced
	if !h.srv.Up(agent) {
		t.Fatal("agent not up after the replacement")
	}
	gone2 := h.srv.Gone(agent)
	if closed(gone2) {
		t.Fatal("Gone of the newer link is closed while it is up")
	}
	c2.Close()
	<-gone2
	if h.srv.Up(agent) {
		t.Error("Up = true after Gone closed")
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// failingAck is a queue whose acknowledgements fail as a damaged store's
// do.
type failingAck struct{ Queue }

func (failingAck) Ack(context.Context, string, []uint64) error {
	return errors.New("store: q.db is corrupt: bbolt panicked: page 3 already freed")
}

// TestStoreFailureIsLogged: a request the relay fails (here an
// acknowledgement its store refuses) closes the link with 1011 and logs
// the store's error at ERROR, naming the agent: the device only sees
// "relay error", so the relay's log is where the operator learns why.
func TestStoreFailureIsLogged(t *testing.T) {
	h := newHarness(t)
	var log syncbuf.Buffer
	h.srv.Logger = slog.New(slog.NewTextHandler(&log, nil))
	h.srv.Queue = failingAck{h.q}
	dev := didtest.Key(t, 1)
	h.enqueue(t, dev.DID(), 3)
	c := h.dial(t, dev, nil)
	_, err := c.Drain(context.Background(), 10, func(context.Context, []wire.Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "relay error") {
		t.Fatalf("Drain = %v, want the link closed with relay error", err)
	}
	<-h.agents.events // unlinked: the handler has returned
	got := log.String()
	if !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "page 3 already freed") || !strings.Contains(got, dev.DID().String()) {
		t.Errorf("relay log after a failed ack:\n%s\nwant an ERROR line with the store's error and the agent", got)
	}
}

// TestNormalCloseIsNoError: a device that closes its link at the end of
// its wake gets a "link down" line that says so, not a websocket reader
// error ("failed to get reader: received close frame: status =
// StatusNormalClosure" read like a fault in every wake's log).
func TestNormalCloseIsNoError(t *testing.T) {
	h := newHarness(t)
	var log syncbuf.Buffer
	h.srv.Logger = slog.New(slog.NewTextHandler(&log, nil))
	dev := didtest.Key(t, 1)
	c := h.dial(t, dev, nil)
	c.Close()
	<-h.agents.events // unlinked: the handler has returned
	got := log.String()
	if !strings.Contains(got, `msg="link down" agent=`+dev.DID().String()+" closedBy=device") || strings.Contains(got, "err=") {
		t.Errorf("relay log after a normal close:\n%s\nwant link down closedBy=device and no err", got)
	}
}

// TestHelloSaysWhetherTheQueueIsEmpty: the hello says the queue is empty
// (wire.Frame.Empty) only when it holds no record for the device, so that
// the device may leave out a pull that would find nothing.
func TestHelloSaysWhetherTheQueueIsEmpty(t *testing.T) {
	h := newHarness(t)
	idle, busy := didtest.Key(t, 1), didtest.Key(t, 2)
	h.enqueue(t, busy.DID(), 1)
	if c := h.dial(t, idle, nil); !c.QueueEmpty() {
		t.Error("QueueEmpty() = false with nothing queued, want true")
	}
	if c := h.dial(t, busy, nil); c.QueueEmpty() {
		t.Error("QueueEmpty() = true with a record queued, want false")
	}
}

// lookingQueue blocks the first look for one record (the hello's
// queueEmpty) until release is closed, after telling looking.
type lookingQueue struct {
	queue.Store
	once             sync.Once
	looking, release chan struct{}
}

func (q *lookingQueue) Next(ctx context.Context, agent string, after uint64, max int, now time.Time) ([]queue.Record, error) {
	if max == 1 {
		q.once.Do(func() { close(q.looking); <-q.release })
	}
	return q.Store.Next(ctx, agent, after, max, now)
}

// TestNoFrameBeforeTheHello: a record queued while the relay looks at
// the queue for the hello (the link is attached by then) is notified
// after the hello, not before it: the device reads the hello first. Under
// load on a cluster the queued frame went first and the device refused
// the link ("frame "queued" after the proof, want hello").
func TestNoFrameBeforeTheHello(t *testing.T) {
	h := newHarness(t)
	lq := &lookingQueue{Store: h.q, looking: make(chan struct{}), release: make(chan struct{})}
	h.srv.Queue = lq
	dev := didtest.Key(t, 1)
	dialed := make(chan error, 1)
	var c *link.Client
	go func() {
		var err error
		c, err = link.Dial(context.Background(), link.Config{RelayURL: h.http.URL, Key: dev})
		dialed <- err
	}()
	<-lq.looking
	rec, err := h.q.Enqueue(context.Background(), queue.Record{Agent: dev.DID().String(), From: "did:key:zSender", Body: []byte("b")}, queuebounds.Default(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.srv.Notify(dev.DID().String(), rec.Seq)
	select {
	case err := <-dialed:
		t.Fatalf("the link ended before its hello: %v", err)
	case <-time.After(time.Second): // the notification had its chance to go out first
	}
	close(lq.release)
	if err := <-dialed; err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer c.Close()
	select {
	case <-c.Queued():
	case <-time.After(10 * time.Second):
		t.Fatal("the record queued during the hello was never notified")
	}
}
