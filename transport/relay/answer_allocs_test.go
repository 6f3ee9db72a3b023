//go:build !race

// The allocation counts below hold without the race detector only: under
// -race, sync.Pool drops what is put in it at random.

package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// TestAsleepAnswerAllocations counts what the relay's handler allocates to
// answer a sender for a sleeping agent, 503 agent_asleep with the request
// queued on the record log, for a SendMessage with one Governed Object
// (the request BenchmarkAnswerPath sends): at most 24, of which 11 are the
// record log's commit (shared by the answers of one batch), 6 or 7
// a2a.ReadBody's, and one the body itself. It took 48 before the calls of
// a group commit, the record log's part of a commit and the media types
// ReadBody reads were reused, before the handler stopped allocating the
// errors it looks for on the path that finds none and the Vary value it
// sets on every answer, and before the agent's state came from
// store/agents' cache without a read transaction (8 of them).
// net/http's own allocations (the request, its headers, the response)
// are outside the count: the handler is called with a request built
// beforehand and a writer that keeps its header map.
func TestAsleepAnswerAllocations(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Access.AdmitAll = true
		c.Limits.Bounds = queuebounds.Default()
		c.Limits.Bounds.MaxMessages, c.Limits.Bounds.MaxPerPeer = 1<<20, 1<<20
		c.Limits.Bounds.MaxBytes, c.Limits.Bounds.MaxPeerBytes = 1<<40, 1<<40
		l, err := queue.OpenLog(filepath.Join(t.TempDir(), "log"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		c.Stores.Queue = l
	})
	dev, sender := didtest.Key(t, 1), didtest.Key(t, 10)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	tok, err := issueToken(sender, h.relay.cfg.PublicURL, h)
	if err != nil {
		t.Fatal(err)
	}
	body := objectRequest(t, sender, t0)
	const runs = 50
	reqs := make([]*http.Request, runs+2)
	for i := range reqs {
		reqs[i] = newAsleepRequest(dev.DID(), bearer.Authorization(tok), body)
	}
	handler, w := h.relay.Handler(), &headerKeeper{h: http.Header{}}
	next := 0
	serve := func() {
		clear(w.h)
		w.status = 0
		handler.ServeHTTP(w, reqs[next])
		next++
		if w.status != http.StatusServiceUnavailable || !bytes.Contains(w.body.Bytes(), []byte(`"queued":true`)) {
			t.Fatalf("answer %d %s, want 503 queued", w.status, w.body.Bytes())
		}
		w.body.Reset()
	}
	serve() // the pools filled
	n := testing.AllocsPerRun(runs, serve)
	t.Logf("%.1f allocations per asleep answer", n)
	if n > 24 {
		t.Errorf("the asleep answer allocates %.1f times, want at most 24", n)
	}
}

// objectRequest is a SendMessage with one Governed Object of about 1 KiB
// from, signed at at.
func objectRequest(tb testing.TB, from *did.PrivateKey, at time.Time) []byte {
	tb.Helper()
	o, err := governed.Sign(from, governed.Template{IssuedAt: at, Semantic: governed.Semantic{Schema: "https://torpor.dev/schemas/bench/v1"},
		Payload: map[string]string{"text": strings.Repeat("x", 700)}, Purpose: "comms:message", TTL: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	obj, err := o.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	p, err := a2a.DataObjectPart{Object: obj}.Part()
	if err != nil {
		tb.Fatal(err)
	}
	req, err := a2a.NewSendMessage(json.RawMessage(`1`), a2a.Version10, a2a.NewUserMessage("m-1", "", p))
	if err != nil {
		tb.Fatal(err)
	}
	b, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func newAsleepRequest(agent did.DID, auth string, body []byte) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, "/a/"+agent.String()+"/a2a/jsonrpc", io.NopCloser(bytes.NewReader(body)))
	r.ContentLength = int64(len(body))
	r.Header.Set("Authorization", auth)
	r.Header.Set("A2A-Version", "1.0")
	r.Header.Set("Content-Type", "application/json")
	r.RemoteAddr = "127.0.0.1:1"
	return r
}

// headerKeeper is a ResponseWriter that keeps one header map and the
// body written, and allocates nothing itself once its buffer has grown.
type headerKeeper struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *headerKeeper) Header() http.Header { return w.h }
func (w *headerKeeper) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *headerKeeper) SetReadDeadline(time.Time) error  { return nil }
func (w *headerKeeper) SetWriteDeadline(time.Time) error { return nil }
func (w *headerKeeper) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// TestDeadlinesAllocations: the deadlines a request with a body gets cost
// one allocation, its body's wrapper, which holds the controller that
// moves them (it took two).
func TestDeadlinesAllocations(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0"}`)
	var buf [64]byte
	h := testLimits().deadlines(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := r.Body.Read(buf[:]); err != nil {
				return
			}
		}
	}))
	w := &headerKeeper{h: http.Header{}}
	r := newAsleepRequest(didtest.Key(t, 1).DID(), "", body)
	rd := &bodyReader{}
	n := testing.AllocsPerRun(100, func() {
		rd.Reset(body)
		r.Body = rd
		h.ServeHTTP(w, r)
	})
	if n > 1 {
		t.Errorf("the deadlines of a request with a body allocate %v times, want 1", n)
	}
}

// bodyReader is a request body that can be read again.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }
