//go:build integration

package relay

import (
	"bufio"
	"context"
	"io"
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
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

var (
	buildOnce sync.Once
	relayBin  string
	buildErr  error
)

// relayBinary builds the real torpor-relay once per test binary.
func relayBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "torpor-relay-bin")
		if err != nil {
			buildErr = err
			return
		}
		relayBin = filepath.Join(dir, "torpor-relay")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", relayBin, "./cmd/torpor-relay")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = err
			relayBin = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building torpor-relay: %v\n%s", buildErr, relayBin)
	}
	return relayBin
}

// relayProc is a running torpor-relay process.
type relayProc struct {
	cmd *exec.Cmd
	url string // http://127.0.0.1:port, also the public URL
	log *strings.Builder
	mu  sync.Mutex
}

var listenRE = regexp.MustCompile(`msg="torpor-relay listening" addr=(\S+)`)

// startRelay runs torpor-relay on data dir with loopback ports chosen by
// the kernel and waits until it serves.
func startRelay(t testing.TB, dataDir string, extra ...string) *relayProc {
	t.Helper()
	args := append([]string{"--listen", "127.0.0.1:0", "--mqtt-listen", "127.0.0.1:0", "--data-dir", dataDir, "--log-level", "info"}, extra...)
	cmd := exec.Command(relayBinary(t), args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &relayProc{cmd: cmd, log: &strings.Builder{}}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if m := listenRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case p.url = <-found:
	case <-time.After(30 * time.Second):
		t.Fatalf("torpor-relay did not start:\n%s", p.logs())
	}
	return p
}

func (p *relayProc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// kill sends SIGKILL and reaps the process.
func (p *relayProc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}

func testKey(tb testing.TB, n int) *did.PrivateKey {
	tb.Helper()
	seed := make([]byte, 32)
	seed[30], seed[31] = byte(n>>8), byte(n)
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// publish links dev to the relay at url, publishes mode with a signed card
// whose bounds are those the relay announced, and closes the link.
func publish(t testing.TB, url string, dev *did.PrivateKey, mode string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: url, Key: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := c.Hello().Card()
	card, err := a2a.BuildCard(a2a.CardOptions{Name: "sleeper", BaseURL: url + "/a/" + dev.DID().String(), OfflineMode: mode, Bounds: &b})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := a2a.SignCard(card, dev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, wire.State{Mode: mode, Card: raw}); err != nil {
		t.Fatal(err)
	}
}

// pullAll links dev and returns every queued record without acknowledging.
func pullAll(t testing.TB, url string, dev *did.PrivateKey) []wire.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: url, Key: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var all []wire.Record
	var after uint64
	for {
		recs, more, err := c.Pull(ctx, after, 500)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
		if len(recs) == 0 || !more {
			return all
		}
		after = recs[len(recs)-1].Seq
	}
}

func token(t testing.TB, k *did.PrivateKey, aud string) string {
	t.Helper()
	tok, err := bearer.Issue(k, aud, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
