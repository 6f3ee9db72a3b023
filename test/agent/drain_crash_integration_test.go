//go:build integration

package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/replay"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

const (
	crashRecords = 500
	crashTrials  = 50
	crashBatch   = 16
	envSocket    = "TORPOR_AGENT_TEST_SOCKET"
)

// childDrainEvents is the agent of the drain crash test: it settles the
// outbox a previous run left (printing how many notifications it lost),
// then drains the relay queue through the real pipeline, handing objects
// to the parent's Unix socket, and prints an event line at each step the
// parent may kill it after: "commit N" (a batch's transaction committed),
// "ack N" (the relay deleted it), "done".
func childDrainEvents(dir, socket string) int {
	err := func() error {
		q, err := openQueue(dir)
		if err != nil {
			return err
		}
		defer q.Close()
		db, err := store.Open(filepath.Join(dir, runtime.DBFile), nil)
		if err != nil {
			return err
		}
		defer db.Close()
		now := issued.Add(time.Minute)
		p, err := runtime.OpenPipeline(db, agentPipelineConfig(clocktest.New(now), deliver.NewUnix(socket, "/", nil)))
		if err != nil {
			return err
		}
		defer p.Close()
		ctx := context.Background()
		rec, err := p.Recover(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("recovered lost=%d\n", rec.Lost)
		me := agentKey.DID().String()
		var after uint64
		for n := 0; ; n++ {
			recs, err := q.Next(ctx, me, after, crashBatch, now)
			if err != nil || len(recs) == 0 {
				fmt.Println("done")
				return err
			}
			batch := make([]drain.Record, len(recs))
			for i, r := range recs {
				batch[i] = drain.Record{Seq: r.Seq, From: r.From, Body: r.Body}
			}
			_, err = p.Batch(ctx, batch, func(ctx context.Context, seqs []uint64) error {
				fmt.Printf("commit %d\n", n)
				err := q.Ack(ctx, me, seqs)
				fmt.Printf("ack %d\n", n)
				return err
			})
			if err != nil {
				return err
			}
			after = recs[len(recs)-1].Seq
		}
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// app is the application behind the Unix socket: it counts deliveries per
// object id and calls onDeliver (the parent's kill trigger) for each.
type app struct {
	mu        sync.Mutex
	got       map[string]int
	onDeliver func()
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var d deliver.Delivery
	if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	a.mu.Lock()
	a.got[d.ObjectID]++
	hook := a.onDeliver
	a.mu.Unlock()
	if hook != nil {
		hook()
	}
	io.WriteString(w, "ok")
}

func (a *app) counts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.got {
		out[k] = v
	}
	return out
}

// TestDrainCrash kills the agent with SIGKILL at a random point of a
// 500-record drain, 50 times. After each kill, every record the relay no
// longer holds is committed in the agent's replay cache (nothing left the
// relay before the agent committed it); after the restart drained the
// rest, no object reached the application twice, and every object was
// either delivered or reported as possibly lost by the at-most-once
// recovery (none silently dropped).
//
// The records are MLS-encrypted (a pair session from Alice, its Welcome
// queued first), so the batch transaction commits MLS state with the
// replay entries.
func TestDrainCrash(t *testing.T) {
	sockDir, err := os.MkdirTemp("", "tc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	socket := filepath.Join(sockDir, "app.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	application := &app{got: map[string]int{}}
	srv := &http.Server{Handler: application}
	go srv.Serve(ln)
	defer srv.Close()

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for trial := 0; trial < crashTrials; trial++ {
		application.mu.Lock()
		application.got = map[string]int{}
		application.mu.Unlock()
		w := newWorld(t)
		ids, group := w.enqueueMany(crashRecords)
		// Events: 2 per batch (commit, ack) and one per delivery.
		events := 2*((crashRecords+1+crashBatch-1)/crashBatch) + crashRecords
		killAt := rng.IntN(events)
		w.crashAt(socket, application, killAt)
		w.checkCommittedBeforeAck(ids, group)
		lost := w.drainToEnd(socket)
		got := application.counts()
		delivered := 0
		for id, n := range got {
			if n > 1 {
				t.Fatalf("trial %d (kill at event %d): object %s reached the application %d times", trial, killAt, id, n)
			}
			delivered += n
		}
		// Every object was delivered or reported as possibly lost; only
		// the batch the kill interrupted can have lost notifications
		// (some of them may have been delivered before the kill).
		if delivered+lost < crashRecords || lost > crashBatch {
			t.Fatalf("trial %d (kill at event %d): %d delivered, %d reported possibly lost, of %d", trial, killAt, delivered, lost, crashRecords)
		}
		// The agent's ledger keeps each of those, by object: every object
		// never delivered is in it.
		kept := w.lostInLedger()
		if len(kept) != lost {
			t.Fatalf("trial %d (kill at event %d): recovery reported %d lost, the ledger keeps %d", trial, killAt, lost, len(kept))
		}
		for seq, id := range ids {
			if got[id] == 0 && !kept[id] {
				t.Fatalf("trial %d (kill at event %d): object %s (seq %d) was neither delivered nor kept as possibly lost", trial, killAt, id, seq)
			}
		}
		if n := w.queued(); n != 0 {
			t.Fatalf("trial %d: %d records still queued after the restart", trial, n)
		}
	}
}

// enqueueMany establishes an MLS pair session from Alice to the agent (a
// KeyPackage from the agent's pool, the Welcome queued first) and queues n
// distinct valid objects encrypted in it, in seal order. It returns the
// object ids by seq and the session's group.
func (w *world) enqueueMany(n int) (map[uint64]string, []byte) {
	w.t.Helper()
	clk := clocktest.New(issued)
	kp := w.agentKeyPackage(clk)
	sdb, err := store.Open(filepath.Join(w.dir, "alice", "sessions.db"), &store.Options{NoSync: true})
	if err != nil {
		w.t.Fatal(err)
	}
	defer sdb.Close()
	ss, _ := session.New(session.Config{Key: aliceKey, Clock: clk})
	var pair *session.Pair
	if err := sdb.Update(func(tx *bolt.Tx) (err error) { pair, err = ss.EstablishPair(tx, agentKey.DID(), kp); return err }); err != nil {
		w.t.Fatal(err)
	}
	if err := sdb.Update(func(tx *bolt.Tx) error { return ss.Delivered(tx, pair.Group) }); err != nil {
		w.t.Fatal(err)
	}
	q, err := openQueue(w.dir)
	if err != nil {
		w.t.Fatal(err)
	}
	defer q.Close()
	b := queuebounds.Default()
	b.MaxMessages, b.MaxPerPeer, b.MaxBytes, b.MaxPeerBytes = n+16, n+16, 64<<20, 64<<20
	hs, err := pair.Handshake.Part()
	if err != nil {
		w.t.Fatal(err)
	}
	enqueue := func(kind queue.Kind, part a2a.Part) uint64 {
		r := queue.Record{Agent: agentKey.DID().String(), From: aliceKey.DID().String(), Kind: kind, Body: w.bodyOf(part)}
		r, err := q.Enqueue(context.Background(), r, b, issued)
		if err != nil {
			w.t.Fatal(err)
		}
		return r.Seq
	}
	enqueue(queue.KindHandshake, hs)
	ids := map[uint64]string{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("obj-%04d", i)
		var wire a2a.MLSWire
		obj := w.sign(aliceKey, "comms:message", id, map[string]any{"n": i})
		if err := sdb.Update(func(tx *bolt.Tx) (err error) { wire, err = ss.SealObject(tx, pair.Group, obj); return err }); err != nil {
			w.t.Fatal(err)
		}
		part, err := wire.Part()
		if err != nil {
			w.t.Fatal(err)
		}
		ids[enqueue(queue.KindMessage, part)] = id
	}
	return ids, pair.Group
}

// agentKeyPackage refills the agent's KeyPackage pool in its database by
// one and returns that KeyPackage.
func (w *world) agentKeyPackage(clk *clocktest.Clock) []byte {
	w.t.Helper()
	adb := w.agentDB(nil)
	as, _ := session.New(session.Config{Key: agentKey, Clock: clk})
	var kps [][]byte
	err := adb.Update(func(tx *bolt.Tx) (err error) { kps, err = as.Refill(tx, 1); return err })
	adb.Close()
	if err != nil {
		w.t.Fatal(err)
	}
	return kps[0]
}

// crashAt runs the agent and kills it with SIGKILL at its killAt-th event
// (a progress line or a delivery), or lets it finish if it has fewer.
func (w *world) crashAt(socket string, a *app, killAt int) {
	w.t.Helper()
	cmd := w.eventChild(socket)
	out, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	killed := false
	kill := func() {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n > killAt && !killed {
			killed = true
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	a.mu.Lock()
	a.onDeliver = kill
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.onDeliver = nil
		a.mu.Unlock()
	}()
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "commit") || strings.HasPrefix(sc.Text(), "ack") {
			kill()
		}
	}
	cmd.Wait()
}

func (w *world) eventChild(socket string) *exec.Cmd {
	cmd := w.child(envSocket + "=" + socket)
	for i, e := range cmd.Env {
		if e == envRole+"=drain" {
			cmd.Env[i] = envRole + "=drain-events"
		}
	}
	return cmd
}

// drainToEnd restarts the agent and lets it drain everything; it returns
// the notifications the recovery reported lost.
func (w *world) drainToEnd(socket string) int {
	w.t.Helper()
	out, err := w.eventChild(socket).Output()
	if err != nil {
		w.t.Fatalf("agent restart: %v\n%s", err, out)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	lost, err := strconv.Atoi(strings.TrimPrefix(first, "recovered lost="))
	if err != nil {
		w.t.Fatalf("agent restart printed %q first", first)
	}
	return lost
}

// lostInLedger returns the object ids of the possibly lost hand-offs the
// agent's ledger keeps (store/ledger Lost).
func (w *world) lostInLedger() map[string]bool {
	w.t.Helper()
	db := w.agentDB(nil)
	defer db.Close()
	l, err := ledger.Open(db, &ledger.Options{Clock: clocktest.New(issued.Add(time.Minute))})
	if err != nil {
		w.t.Fatal(err)
	}
	var s ledger.LostSummary
	if err := db.View(func(tx *bolt.Tx) (err error) { s, err = l.LostHandOffs(tx); return err }); err != nil {
		w.t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, r := range s.Kept {
		kept[r.ObjectID] = true
	}
	return kept
}

// checkCommittedBeforeAck checks, on the files a killed agent left, that
// every record the relay deleted is committed in the agent's store: the
// Welcome as the joined group, each object in the replay cache.
func (w *world) checkCommittedBeforeAck(ids map[uint64]string, group []byte) {
	w.t.Helper()
	q, err := openQueue(w.dir)
	if err != nil {
		w.t.Fatal(err)
	}
	recs, err := q.Next(context.Background(), agentKey.DID().String(), 0, 1<<20, issued.Add(time.Minute))
	q.Close()
	if err != nil {
		w.t.Fatal(err)
	}
	left := map[uint64]bool{}
	for _, r := range recs {
		left[r.Seq] = true
	}
	db := w.agentDB(nil)
	defer db.Close()
	rc, err := replay.Open(db, &replay.Options{Clock: clocktest.New(issued.Add(time.Minute))})
	if err != nil {
		w.t.Fatal(err)
	}
	if len(left) == 0 || !left[1] { // the Welcome left the relay
		s, _ := session.New(session.Config{Key: agentKey})
		var joined bool
		db.View(func(tx *bolt.Tx) (err error) { joined, err = s.Has(tx, group); return err })
		if !joined {
			w.t.Fatalf("the Welcome left the relay but the agent never committed its join")
		}
	}
	for seq, id := range ids {
		if left[seq] {
			continue
		}
		seen, err := rc.Seen(aliceKey.DID().String(), id)
		if err != nil {
			w.t.Fatal(err)
		}
		if !seen {
			w.t.Fatalf("record %d (%s) left the relay but the agent never committed it", seq, id)
		}
	}
}

// queued returns the records still queued.
func (w *world) queued() int {
	q, err := openQueue(w.dir)
	if err != nil {
		w.t.Fatal(err)
	}
	defer q.Close()
	st, err := q.Stats(context.Background(), agentKey.DID().String(), issued.Add(time.Minute))
	if err != nil {
		w.t.Fatal(err)
	}
	return st.Messages
}
