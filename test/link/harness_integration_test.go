//go:build integration

package link

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

var (
	buildOnce sync.Once
	binDir    string
	buildOut  string
	buildErr  error
)

// binary builds torpor-relay and torpor-agent once per test binary and
// returns the path of name.
func binary(t testing.TB, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "torpor-link-bin"); buildErr != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/torpor-relay", "./cmd/torpor-agent")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		buildOut, buildErr = string(out), err
	})
	if buildErr != nil {
		t.Fatalf("building the binaries: %v\n%s", buildErr, buildOut)
	}
	return filepath.Join(binDir, name)
}

// proc is a running binary whose stderr (its log) is kept and can be
// waited on line by line.
type proc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	added chan struct{} // closed and replaced at every line
	seen  int           // lines waitN looked at
}

func start(t testing.TB, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), added: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.added)
			p.added = make(chan struct{})
			p.mu.Unlock()
		}
		io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		if t.Failed() {
			t.Logf("%s log:\n%s", filepath.Base(bin), p.log())
		}
	})
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// wait returns the first line (from the start of the log) that matches re
// and has every one of subs, waiting up to 30 s for it.
func (p *proc) wait(t testing.TB, re *regexp.Regexp, subs ...string) []string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for i := 0; ; {
		p.mu.Lock()
		lines, added := p.lines, p.added
		p.mu.Unlock()
		for ; i < len(lines); i++ {
			if m := re.FindStringSubmatch(lines[i]); m != nil && hasAll(lines[i], subs) {
				return m
			}
		}
		select {
		case <-added:
		case <-deadline:
			t.Fatalf("no log line matching %s with %q in 30 s", re, subs)
		}
	}
}

// count returns how many lines match re and have every one of subs.
func (p *proc) count(re *regexp.Regexp, subs ...string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.lines {
		if re.MatchString(l) && hasAll(l, subs) {
			n++
		}
	}
	return n
}

func hasAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

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
	relay    *proc
	relayURL string // where the relay listens
	tap      *tap   // the relay's public URL
	dir      string
}

var listenRE = regexp.MustCompile(`msg="torpor-relay listening" addr=(\S+)`)

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{tap: newTap(t), dir: t.TempDir()}
	w.relay = start(t, binary(t, "torpor-relay"), "--listen", "127.0.0.1:0", "--mqtt-listen", "127.0.0.1:0",
		"--data-dir", filepath.Join(w.dir, "relay"), "--public-url", w.tap.srv.URL, "--log-level", "info")
	w.relayURL = w.relay.wait(t, listenRE)[1]
	u, err := url.Parse(w.relayURL)
	if err != nil {
		t.Fatal(err)
	}
	w.tap.mu.Lock()
	w.tap.target = httputil.NewSingleHostReverseProxy(u)
	w.tap.mu.Unlock()
	return w
}

// agent starts torpor-agent with key, always on, linked through the tap.
func (w *world) agent(t *testing.T, key *did.PrivateKey) *proc {
	t.Helper()
	keyFile := filepath.Join(w.dir, "agent.key")
	if err := did.SaveKey(keyFile, key, true); err != nil {
		t.Fatal(err)
	}
	return start(t, binary(t, "torpor-agent"), "--key", keyFile, "--data-dir", filepath.Join(w.dir, "agent"),
		"--relay", w.tap.srv.URL, "--mode", "always_on", "--name", "plot-7", "--purposes", "comms:*",
		"--handler", "*=exec:/bin/true")
}

func testKey(tb testing.TB, n byte) *did.PrivateKey {
	tb.Helper()
	seed := make([]byte, 32)
	seed[31] = n
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func timeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
