//go:build integration

package link

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// tap is a reverse proxy in front of the relay, the relay's public URL.
// It copies the Authorization header of every link upgrade into tokens
// and, while steal is positive, keeps the request from the relay (502)
// instead of forwarding it, as a thief on the path would.
type tap struct {
	srv    *httptest.Server
	tokens chan string
	mu     sync.Mutex
	steal  int
	target *httputil.ReverseProxy
}

func newTap(t testing.TB) *tap {
	tp := &tap{tokens: make(chan string, 16)}
	tp.srv = httptest.NewServer(http.HandlerFunc(tp.serve))
	t.Cleanup(tp.srv.Close)
	return tp
}

func (tp *tap) serve(w http.ResponseWriter, r *http.Request) {
	tp.mu.Lock()
	target, steal := tp.target, false
	if r.URL.Path == wire.Path {
		tp.tokens <- r.Header.Get("Authorization")
		if steal = tp.steal > 0; steal {
			tp.steal--
		}
	}
	tp.mu.Unlock()
	if steal || target == nil {
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	target.ServeHTTP(w, r)
}

// world is a relay behind a tap, on loopback.
type world struct {
	relay *relaytest.Relay // relay.URL is where it listens
	tap   *tap             // the relay's public URL
	dir   string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{tap: newTap(t), dir: t.TempDir()}
	w.relay = relaytest.Start(t, filepath.Join(w.dir, "relay"), "--public-url", w.tap.srv.URL)
	u, err := url.Parse(w.relay.URL)
	if err != nil {
		t.Fatal(err)
	}
	w.tap.mu.Lock()
	w.tap.target = httputil.NewSingleHostReverseProxy(u)
	w.tap.mu.Unlock()
	return w
}

// agent starts torpor-agent with key, always on, linked through the tap.
func (w *world) agent(t *testing.T, key *did.PrivateKey) *testenv.Proc {
	t.Helper()
	keyFile := testenv.KeyFile(t, key)
	return testenv.Start(t, testenv.Binary(t, "torpor-agent"), "--key", keyFile, "--data-dir", filepath.Join(w.dir, "agent"),
		"--relay", w.tap.srv.URL, "--mode", "always_on", "--name", "plot-7", "--purposes", "comms:*",
		"--handler", "*=exec:/bin/true")
}

func timeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
