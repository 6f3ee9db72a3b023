//go:build integration

package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/sessions"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// Roles of the re-executed test binary.
const (
	envRole = "TORPOR_AGENT_TEST_ROLE" // "drain" or "effect"
	envDir  = "TORPOR_AGENT_TEST_DIR"
	// The effect's log (one line per run, fsynced), and when it should
	// stop after logging: it writes "ran" to the FIFO and blocks, so the
	// parent can kill the agent between the effect and its completion.
	envEffectLog  = "TORPOR_EFFECT_LOG"
	envEffectFIFO = "TORPOR_EFFECT_FIFO"
)

// issued is when the test's objects were signed; the agent's clock reads a
// minute later.
var issued = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "drain":
		os.Exit(childDrain(os.Getenv(envDir)))
	case "drain-events":
		os.Exit(childDrainEvents(os.Getenv(envDir), os.Getenv(envSocket)))
	case "effect":
		os.Exit(childEffect())
	}
	os.Exit(m.Run())
}

func seedKey(last byte) *did.PrivateKey {
	seed := make([]byte, 32)
	seed[31] = last
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		panic(err)
	}
	return k
}

// The test identities: the agent, its owner, and Alice, a counterparty.
var (
	agentKey = seedKey(0x20)
	ownerKey = seedKey(0x21)
	aliceKey = seedKey(0x01)
)

// childDrain is the agent: it drains every record of the relay queue in
// dir through the real pipeline and prints the report as JSON.
func childDrain(dir string) int {
	rep, err := drainOnce(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

func drainOnce(dir string) (drain.Report, error) {
	q, err := openQueue(dir)
	if err != nil {
		return drain.Report{}, err
	}
	defer q.Close()
	db, err := store.Open(filepath.Join(dir, runtime.DBFile), nil)
	if err != nil {
		return drain.Report{}, err
	}
	defer db.Close()
	self, _ := os.Executable()
	effect := &deliver.Exec{Path: self, Env: []string{envRole + "=effect"}}
	p, err := runtime.OpenPipeline(db, agentPipelineConfig(clocktest.New(issued.Add(time.Minute)), effect))
	if err != nil {
		return drain.Report{}, err
	}
	defer p.Close()
	ctx := context.Background()
	var total drain.Report
	me := agentKey.DID().String()
	now := issued.Add(time.Minute)
	var after uint64
	for {
		recs, err := q.Next(ctx, me, after, 16, now)
		if err != nil || len(recs) == 0 {
			return total, err
		}
		batch := make([]drain.Record, len(recs))
		for i, r := range recs {
			batch[i] = drain.Record{Seq: r.Seq, From: r.From, Body: r.Body}
		}
		rep, err := p.Batch(ctx, batch, func(ctx context.Context, seqs []uint64) error { return q.Ack(ctx, me, seqs) })
		total.Add(rep)
		if err != nil {
			return total, err
		}
		after = recs[len(recs)-1].Seq
	}
}

// agentPipelineConfig is the agent of these tests: owner-controlled,
// accepting comms and actions, actions consequential, plaintext allowed
// (the MLS layer is not under test here).
func agentPipelineConfig(clk *clocktest.Clock, actions deliver.Handler) runtime.PipelineConfig {
	s, err := session.New(session.Config{Key: agentKey, Clock: clk})
	if err != nil {
		panic(err)
	}
	return runtime.PipelineConfig{
		Key: agentKey, Owner: ownerKey.DID(), Purposes: purpose.Set{"comms:*", "action:*"},
		Consequential: purpose.Set{"action:*"}, AllowPlaintext: true,
		Routes:   []deliver.Route{{Pattern: "*", Name: "effect", Handler: actions}},
		Sessions: sessions.Sessions{S: s},
		Clock:    clk,
	}
}

// childEffect is the application's effect: it appends its idempotency key
// to the log (fsynced: the effect happened), then, when a FIFO is named,
// says so on it and blocks until killed.
func childEffect() int {
	var d deliver.Delivery
	if err := json.NewDecoder(os.Stdin).Decode(&d); err != nil {
		return 3
	}
	f, err := os.OpenFile(os.Getenv(envEffectLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 4
	}
	_, idem, _ := strings.Cut(d.IdempotencyKey, " ") // the ledger key is "<issuer> <key>"
	fmt.Fprintln(f, idem)
	f.Sync()
	f.Close()
	if fifo := os.Getenv(envEffectFIFO); fifo != "" {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			fmt.Fprintln(w, "ran")
			w.Close()
			select {}
		}
	}
	fmt.Printf(`{"effectId":"effect-%s"}`, d.ObjectID)
	return 0
}

// world is one test's directory: the relay queue, the agent store, the
// effect log.
type world struct {
	t   *testing.T
	dir string
}

func newWorld(t *testing.T) *world { return &world{t: t, dir: t.TempDir()} }

// sign returns a Governed Object by k.
func (w *world) sign(k *did.PrivateKey, p, id string, payload any) []byte {
	w.t.Helper()
	o, err := governed.Sign(k, governed.Template{ID: id, IssuedAt: issued, Semantic: governed.Semantic{Schema: "urn:torpor:test:agent"},
		Payload: payload, Purpose: p, TTL: 24 * time.Hour})
	if err != nil {
		w.t.Fatal(err)
	}
	b, _ := o.MarshalJSON()
	return b
}

// enqueue queues objects for the agent, each in its own unencrypted
// message, as the relay does for a sleeping agent.
func (w *world) enqueue(from *did.PrivateKey, objs ...[]byte) {
	w.t.Helper()
	q, err := openQueue(w.dir)
	if err != nil {
		w.t.Fatal(err)
	}
	defer q.Close()
	b := queuebounds.Default()
	b.MaxMessages, b.MaxPerPeer, b.MaxBytes, b.MaxPeerBytes = 1000, 1000, 64<<20, 64<<20 // the crash test queues 500 from Alice
	for _, o := range objs {
		r := queue.Record{Agent: agentKey.DID().String(), From: from.DID().String(), Body: w.body(o)}
		if _, err := q.Enqueue(context.Background(), r, b, issued); err != nil {
			w.t.Fatal(err)
		}
	}
}

// body returns the queued JSON-RPC body carrying obj unencrypted.
func (w *world) body(obj []byte) []byte {
	part, err := a2a.DataObjectPart{Object: obj}.Part()
	if err != nil {
		w.t.Fatal(err)
	}
	return w.bodyOf(part)
}

// bodyOf returns the queued JSON-RPC body (SendMessage) carrying part.
func (w *world) bodyOf(part a2a.Part) []byte {
	req, _ := a2a.NewSendMessage(json.RawMessage(`1`), a2a.Version10, a2a.NewUserMessage("m", "", part))
	b, _ := json.Marshal(req)
	return b
}

// policy enqueues the owner's policy allowing action:hold from Alice.
func (w *world) policy() {
	w.enqueue(ownerKey, w.sign(ownerKey, "torpor:policy", "policy-1", map[string]any{
		"agent": agentKey.DID().String(),
		"rules": []map[string]any{{"action": "action:hold", "counterparties": []string{aliceKey.DID().String()}}},
	}))
}

func (w *world) action(id, idem string) []byte {
	return w.sign(aliceKey, "action:hold", id, map[string]any{"idempotencyKey": idem})
}

func (w *world) child(env ...string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		w.t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=drain", envDir+"="+w.dir, envEffectLog+"="+w.effectLog())
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the effect dies with the agent
	return cmd
}

func (w *world) effectLog() string { return filepath.Join(w.dir, "effects.log") }

// effects returns the idempotency keys the effect ran for, in order.
func (w *world) effects() []string {
	b, err := os.ReadFile(w.effectLog())
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// drain runs the agent to completion and returns its report.
func (w *world) drain() drain.Report {
	w.t.Helper()
	out, err := w.child().Output()
	if err != nil {
		w.t.Fatalf("agent child: %v", err)
	}
	var rep drain.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		w.t.Fatalf("agent child output %q: %v", out, err)
	}
	return rep
}

// drainAndKillDuringEffect runs the agent, waits until the effect has
// happened (logged and fsynced) and kills the agent and the effect with
// SIGKILL before the agent could record the completion.
func (w *world) drainAndKillDuringEffect() {
	w.t.Helper()
	fifo := filepath.Join(w.dir, "effect.fifo")
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		w.t.Fatal(err)
	}
	cmd := w.child(envEffectFIFO + "=" + fifo)
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the effect opens it
		if err == nil {
			_, err = bufio.NewReader(f).ReadString('\n')
			f.Close()
		}
		ran <- err
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-ran:
		if err != nil {
			w.t.Fatal(err)
		}
	case err := <-exited:
		w.t.Fatalf("the agent exited before the effect ran: %v", err)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// operator runs torpor-agent's operator command on w's store.
func (w *world) operator(bin string, argv ...string) string {
	w.t.Helper()
	cfg := filepath.Join(w.dir, "agent.json")
	if _, err := os.Stat(cfg); err != nil {
		keyFile := testenv.KeyFile(w.t, agentKey)
		c := map[string]any{"version": 1, "key": keyFile, "dataDir": w.dir, "relay": "http://127.0.0.1:9",
			"owner": ownerKey.DID().String(), "purposes": []string{"comms:*", "action:*"},
			"handlers": []map[string]any{{"purpose": "*", "exec": map[string]any{"path": "/bin/false"}}}}
		b, _ := json.Marshal(c)
		if err := os.WriteFile(cfg, b, 0o600); err != nil {
			w.t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, append([]string{argv[0], "--config", cfg}, argv[1:]...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("torpor-agent %v: %v\n%s", argv, err, out)
	}
	return string(out)
}

// agentDB opens the agent's store in w's directory with the options o;
// the caller closes it.
func (w *world) agentDB(o *store.Options) *bolt.DB {
	w.t.Helper()
	db, err := store.Open(filepath.Join(w.dir, runtime.DBFile), o)
	if err != nil {
		w.t.Fatal(err)
	}
	return db
}

// ledgerState reads a key's state from the agent's store.
func (w *world) ledgerState(key string) string {
	w.t.Helper()
	db := w.agentDB(&store.Options{NoSync: true})
	defer db.Close()
	p, err := runtime.OpenPipeline(db, agentPipelineConfig(clocktest.New(issued), &deliver.Exec{Path: "/bin/false"}))
	if err != nil {
		w.t.Fatal(err)
	}
	defer p.Close()
	e, err := p.Entry(key)
	if err != nil {
		return err.Error()
	}
	return e.State.String()
}

// openQueue opens the relay queue of the test's directory as the relay
// would: whichever engine the directory holds (queue.OpenDir), or a new
// record log, the relay's default engine.
func openQueue(dir string) (queue.Store, error) {
	q, err := queue.OpenDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return queue.OpenLog(filepath.Join(dir, queue.LogDir), nil)
	}
	return q, err
}
