//go:build integration

package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// The test binary is also torpor-agent's exec handler in
// TestAgentKilledMidHandOff: with envRole=handler it records the delivery
// it is given and, the first time the block file exists, says so on the
// FIFO and hangs until killed.
const (
	envRole       = "TORPOR_FAULTS_ROLE"
	envHandlerLog = "TORPOR_FAULTS_HANDLER_LOG"   // one line per delivery: objectId attempt
	envBlockFile  = "TORPOR_FAULTS_HANDLER_BLOCK" // while it exists, the next delivery hangs
	envFIFO       = "TORPOR_FAULTS_HANDLER_FIFO"  // where a hanging delivery says "pid objectId"
)

func TestMain(m *testing.M) {
	if os.Getenv(envRole) == "handler" {
		os.Exit(handler())
	}
	os.Exit(m.Run())
}

// handler is the application behind the agent's exec handler. It logs the
// delivery (fsynced: the application has it), then hangs if asked to.
func handler() int {
	var d deliver.Delivery
	if err := json.NewDecoder(os.Stdin).Decode(&d); err != nil {
		return 3
	}
	f, err := os.OpenFile(os.Getenv(envHandlerLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 4
	}
	fmt.Fprintf(f, "%s %d\n", d.ObjectID, d.Attempt)
	f.Sync()
	f.Close()
	if os.Remove(os.Getenv(envBlockFile)) == nil {
		if w, err := os.OpenFile(os.Getenv(envFIFO), os.O_WRONLY, 0); err == nil {
			fmt.Fprintf(w, "%d %s\n", os.Getpid(), d.ObjectID)
			w.Close()
			select {} // the agent is killed meanwhile; the test kills this process
		}
	}
	return 0
}

// handOffObjects is how many objects each run queues; the hand-off of
// the blockAt-th one (counting from 1) is interrupted by the kill.
const handOffObjects, blockAt = 12, 5

// TestAgentKilledMidHandOff: the real torpor-agent (mode sleep, plaintext
// objects, an exec handler) drains the real torpor-relay at boot and is
// killed with SIGKILL while its handler holds the fifth hand-off; then it
// boots again and drains the rest. With at-least-once notify the
// interrupted hand-off is handed over again (attempt 2) and nothing is
// reported lost; with at-most-once notify nothing reaches the handler
// twice and every object the handler never got is kept in the agent's
// ledger as possibly lost (torpor-agent status). On both engines, every
// object answered queued: true is accounted for and the queue is empty.
func TestAgentKilledMidHandOff(t *testing.T) {
	agent := testenv.Binary(t, "torpor-agent")
	for _, engine := range engines {
		for _, notify := range []string{"at-most-once", "at-least-once"} {
			t.Run(engine+"/"+notify, func(t *testing.T) {
				testKilledHandOff(t, agent, engine, notify)
			})
		}
	}
}

func testKilledHandOff(t *testing.T, agentBin, engine, notify string) {
	f := newFixture(t, engine, filepath.Join(t.TempDir(), "relay"))
	r := f.start(t)
	relaytest.Publish(t, r.URL, f.dev, "sleep")
	var ids []string
	for i := range handOffObjects {
		id := fmt.Sprintf("h%02d", i)
		if a := postObject(t, r.URL, f.dev.DID(), f.sender, id); !a.Queued {
			t.Fatalf("object %s: status %d, %v; want queued", id, a.Status, a.Err)
		}
		ids = append(ids, id)
	}

	dir := t.TempDir()
	h := newHandlerFiles(t, dir)
	cfg := agentConfigFile(t, dir, f.dev, r.URL, notify)
	p := testenv.Start(t, agentBin, "--config", cfg)
	pid, blocked := h.awaitBlocked(t, p)
	p.Kill() // SIGKILL mid-hand-off: no deferred code, no flush
	syscall.Kill(pid, syscall.SIGKILL)

	p = testenv.Start(t, agentBin, "--config", cfg)
	p.WaitWithin(t, time.Minute, regexp.MustCompile(`msg=wake `))
	if err := p.Stop(); err != nil {
		t.Fatalf("stopping the agent: %v\n%s", err, p.Log())
	}
	if n := queued(t, r.URL); n != 0 {
		t.Errorf("%d records still queued after the second boot, want 0", n)
	}
	got := h.deliveries(t)
	lost := lostObjects(t, agentBin, cfg)
	t.Logf("%s, %s: interrupted %s; deliveries %v; kept as possibly lost %v", engine, notify, blocked, got, lost)
	for _, id := range ids {
		n := len(got[id])
		switch {
		case n == 0 && !lost[id]:
			t.Errorf("object %s was answered queued, never reached the handler and is not kept as possibly lost", id)
		case notify == "at-most-once" && n > 1:
			t.Errorf("object %s reached the handler %d times with at-most-once notify", id, n)
		}
	}
	if notify == "at-least-once" {
		if len(lost) != 0 {
			t.Errorf("at-least-once notify kept %v as possibly lost, want none", lost)
		}
		if a := got[blocked]; len(a) != 2 || a[1] != 2 {
			t.Errorf("the interrupted hand-off of %s: attempts %v, want [1 2] (handed over again)", blocked, a)
		}
	} else if !lost[blocked] {
		t.Errorf("the interrupted hand-off of %s is not kept as possibly lost (kept: %v)", blocked, lost)
	}
	if t.Failed() {
		t.Logf("relay log:\n%s", r.Log())
	}
}

// handlerFiles are the files the handler and the test share.
type handlerFiles struct{ log, block, fifo string }

// newHandlerFiles creates them in dir and puts them in the environment the
// agent (and so its handler) inherits.
func newHandlerFiles(t *testing.T, dir string) handlerFiles {
	t.Helper()
	h := handlerFiles{log: filepath.Join(dir, "handler.log"), block: filepath.Join(dir, "block"), fifo: filepath.Join(dir, "fifo")}
	if err := syscall.Mkfifo(h.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.block, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envRole, "handler")
	t.Setenv(envHandlerLog, h.log)
	t.Setenv(envBlockFile, h.block)
	t.Setenv(envFIFO, h.fifo)
	return h
}

// awaitBlocked returns the pid of the hanging handler and the object it
// holds, once the blockAt-th delivery hangs; the block file is created
// again as deliveries come in, until then.
func (h handlerFiles) awaitBlocked(t *testing.T, agent *testenv.Proc) (int, string) {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		for {
			fh, err := os.Open(h.fifo) // blocks until a handler opens it to write
			if err != nil {
				close(got)
				return
			}
			line, _ := bufio.NewReader(fh).ReadString('\n')
			fh.Close()
			if strings.Count(readFile(h.log), "\n") >= blockAt {
				got <- line
				return
			}
			// Not yet the blockAt-th: let this handler hang no longer than
			// its kill, and arm the block for the next delivery. A handler
			// that died before it said its pid has nothing to kill.
			if pid, _, ok := handlerSaid(line); ok {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			os.WriteFile(h.block, nil, 0o600)
		}
	}()
	select {
	case line := <-got:
		pid, id, ok := handlerSaid(line)
		if !ok {
			t.Fatalf("handler said %q, want \"pid objectId\"", line)
		}
		return pid, id
	case <-time.After(time.Minute):
		t.Fatalf("no hand-off hung within a minute; agent log:\n%s", agent.Log())
	}
	return 0, ""
}

// deliveries returns the attempts the handler logged, by object id.
func (h handlerFiles) deliveries(t *testing.T) map[string][]int {
	t.Helper()
	out := map[string][]int{}
	for _, l := range strings.Split(strings.TrimSpace(readFile(h.log)), "\n") {
		id, attempt, ok := strings.Cut(l, " ")
		if !ok {
			t.Fatalf("handler log line %q", l)
		}
		n, _ := strconv.Atoi(attempt)
		out[id] = append(out[id], n)
	}
	return out
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// agentConfigFile writes torpor-agent's configuration: mode sleep (it
// drains at boot), plaintext objects accepted, notify, the test binary as
// the exec handler of every comms object.
func agentConfigFile(t *testing.T, dir string, key *did.PrivateKey, relayURL, notify string) string {
	t.Helper()
	keyFile := testenv.KeyFile(t, key)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := map[string]any{
		"version": 1, "key": keyFile, "dataDir": filepath.Join(dir, "agent"), "relay": relayURL, "name": "handoff-agent",
		"wake": map[string]any{"methods": []string{"timer"}}, "mode": "sleep", "batchSize": 4,
		"purposes": []string{"comms:*"}, "allowPlaintext": true, "notify": notify, "keyPackages": 2,
		"handlers": []any{map[string]any{"purpose": "comms:*", "exec": map[string]any{"path": self, "timeout": "5m"}}},
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// lostObjects returns the object ids the agent keeps as possibly lost
// (torpor-agent status, offline).
func lostObjects(t *testing.T, agentBin, cfg string) map[string]bool {
	t.Helper()
	out, err := exec.Command(agentBin, "status", "--config", cfg).Output()
	if err != nil {
		t.Fatalf("torpor-agent status: %v\n%s", err, out)
	}
	var st struct {
		Lost []struct {
			ObjectID string `json:"objectId"`
		} `json:"lost"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("torpor-agent status: %v\n%s", err, out)
	}
	m := map[string]bool{}
	for _, l := range st.Lost {
		m[l.ObjectID] = true
	}
	return m
}

// postObject sends a plaintext Governed Object by sender, id, to the
// agent through the relay at url.
func postObject(t *testing.T, url string, agent did.DID, sender *did.PrivateKey, id string) relaytest.Answer {
	t.Helper()
	body, err := relaytest.ObjectBody(sender, id, "urn:torpor:test:faults")
	if err != nil {
		t.Fatal(err)
	}
	tok := relaytest.Token(t, sender, url)
	h := http.Header{"Content-Type": {"application/json"}, a2a.VersionHeader: {a2a.Version10}, "Authorization": {bearer.Authorization(tok)}}
	a := relaytest.Do(t, "POST", url+"/a/"+agent.String()+"/a2a/jsonrpc", h, body)
	var ans struct {
		Queued bool `json:"queued"`
	}
	json.Unmarshal(a.Body, &ans)
	return relaytest.Answer{Status: a.Status, Queued: ans.Queued}
}

// queued returns how many records the relay holds (/metrics).
func queued(t *testing.T, url string) int {
	t.Helper()
	depths, err := procs.QueueDepths(context.Background(), http.DefaultClient, url)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range depths {
		n += d
	}
	return n
}
