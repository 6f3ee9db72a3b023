//go:build integration

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
)

var (
	natsBuildOnce sync.Once
	natsBin       string
	natsBuildErr  error
)

// natsBinary builds nats-server itself (the main package of
// github.com/nats-io/nats-server/v2, the version go.mod names) once per
// test binary, so that a node can be killed with SIGKILL like a real
// deployment's. Nothing Torpor ships links it.
func natsBinary(t testing.TB) string {
	t.Helper()
	natsBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "torpor-nats-bin")
		if err != nil {
			natsBuildErr = err
			return
		}
		natsBin = filepath.Join(dir, "nats-server")
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", natsBin, "github.com/nats-io/nats-server/v2")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			natsBuildErr, natsBin = err, string(out)
		}
	})
	if natsBuildErr != nil {
		t.Fatalf("building nats-server: %v\n%s", natsBuildErr, natsBin)
	}
	return natsBin
}

// natsNode is one nats-server child process of a cluster, with its
// configuration file (fixed ports, so that a restart comes back at the
// same addresses) and its JetStream file store in a temporary directory.
type natsNode struct {
	name    string
	conf    string
	url     string // nats://127.0.0.1:port
	monitor string // http://127.0.0.1:port

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited and been reaped
	log  bytes.Buffer
}

// natsConf is a node's configuration, the one docs/scale-out.md
// describes, on loopback.
const natsConf = `server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream {
  store_dir: %q
  max_memory_store: 64MB
  max_file_store: 1GB
}
cluster {
  name: torpor
  listen: 127.0.0.1:%d
  routes: [%s]
}
`

// startNATSProcs starts a 3-node cluster as child processes and waits
// until every node reports healthy JetStream. The ports are chosen free a
// moment before the servers take them; when one was taken in between, it
// tries again with new ports, up to 3 times.
func startNATSProcs(t testing.TB) []*natsNode {
	t.Helper()
	var err error
	for range 3 {
		var nodes []*natsNode
		if nodes, err = tryNATSProcs(t, t.TempDir()); err == nil {
			return nodes
		}
		for _, n := range nodes {
			n.kill()
		}
	}
	t.Fatalf("starting 3 nats-server processes: %v", err)
	return nil
}

func tryNATSProcs(t testing.TB, dir string) ([]*natsNode, error) {
	ports, err := jsserver.FreePorts(9)
	if err != nil {
		return nil, err
	}
	var routes []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[6+i]))
	}
	var nodes []*natsNode
	for i := range 3 {
		name := fmt.Sprintf("n%d", i+1)
		n := &natsNode{name: name, conf: filepath.Join(dir, name+".conf"),
			url: fmt.Sprintf("nats://127.0.0.1:%d", ports[i]), monitor: fmt.Sprintf("http://127.0.0.1:%d", ports[3+i])}
		conf := fmt.Sprintf(natsConf, name, ports[i], ports[3+i], filepath.Join(dir, name), ports[6+i], strings.Join(routes, ", "))
		if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
			return nodes, err
		}
		if err := n.start(t); err != nil {
			return nodes, err
		}
		nodes = append(nodes, n)
		t.Cleanup(func() {
			n.kill()
			if t.Failed() {
				t.Logf("%s log:\n%s", n.name, n.logs())
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range nodes {
		if err := n.waitHealthy(ctx); err != nil {
			return nodes, err
		}
	}
	return nodes, nil
}

// start runs the node's nats-server.
func (n *natsNode) start(t testing.TB) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.log.Reset()
	n.cmd = exec.Command(natsBinary(t), "-c", n.conf)
	n.cmd.Stdout, n.cmd.Stderr = &lockedWriter{n}, &lockedWriter{n}
	if err := n.cmd.Start(); err != nil {
		return err
	}
	cmd, done := n.cmd, make(chan struct{})
	n.done = done
	go func() { cmd.Wait(); close(done) }()
	return nil
}

// lockedWriter appends a node's output to its log.
type lockedWriter struct{ n *natsNode }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.n.mu.Lock()
	defer w.n.mu.Unlock()
	return w.n.log.Write(p)
}

func (n *natsNode) logs() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log.String()
}

// kill sends SIGKILL (no shutdown, no flush) and reaps the process.
func (n *natsNode) kill() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// waitHealthy polls the node's /healthz until it answers 200: its
// JetStream is enabled, in contact with the meta leader and current with
// the streams it holds (nats-server's health check).
func (n *natsNode) waitHealthy(ctx context.Context) error {
	var last string
	for {
		resp, err := http.Get(n.monitor + "/healthz")
		if err == nil {
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(b.String()))
		} else {
			last = err.Error()
		}
		n.mu.Lock()
		done := n.done
		n.mu.Unlock()
		select {
		case <-done:
			return fmt.Errorf("%s exited: %s", n.name, n.logs())
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy (%s): %w", n.name, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
