// Command powercut is the guest program of the QEMU power-cut test
// (test/qemu/powercut_test.go). On the file system of the virtio disk
// (-dir) it plays, at once, the relay's enqueue and the agent's drain, so
// that one cut of the machine's power hits both:
//
//   - the relay's queue store (store/queue Bolt, queue.db, fsync on
//     commit, as torpor-relay opens it) takes Governed Objects from
//     -senders concurrent senders; after each Enqueue returns, the moment
//     the relay answers 503 with queued true, it prints
//     "QUEUED <seq> <object id>";
//   - the agent's pipeline (runtime.OpenPipeline over agent.db, the
//     receiver checks, replay cache and at-most-once notify of
//     torpor-agent) drains that queue in batches of 16, acknowledging
//     each batch after its commit; the application prints
//     "DELIVERED <object id>" for each notification.
//
// At start it settles what a cut left (printing "RECOVERED lost=<n>", the
// notifications at-most-once recovery dropped), prints "PRESENT <seq>" for
// every record still queued and "READY". With -final it enqueues nothing,
// drains the queue to its end and prints "DONE". Every line is written to
// the console and drained to the UART (tcdrain) before the program goes
// on, so that the host has it before anything that follows.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

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
	"github.com/torpor-dev/torpor/transport/a2a"
)

// issued is when the objects are signed; the agent's clock reads a minute
// later, whatever the guest's clock says.
var issued = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

func main() {
	dir := flag.String("dir", "/data", "The mounted file system of the disk.")
	boot := flag.Int("boot", 0, "The boot's number, in the objects' ids.")
	senders := flag.Int("senders", 4, "Concurrent senders.")
	final := flag.Bool("final", false, "Drain to the end without enqueuing, then print DONE.")
	flag.Parse()
	if err := run(*dir, *boot, *senders, *final); err != nil {
		say("ERROR %v", err)
		os.Exit(1)
	}
}

var consoleMu sync.Mutex

// say prints one line on the console and waits until the UART has sent
// it.
func say(format string, a ...any) {
	consoleMu.Lock()
	defer consoleMu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", a...)
	unix.IoctlSetInt(int(os.Stdout.Fd()), unix.TCSBRK, 1) // tcdrain
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

// The agent, its owner and the senders.
var (
	agentKey = seedKey(0x20)
	ownerKey = seedKey(0x21)
)

func run(dir string, boot, senders int, final bool) error {
	q, err := queue.OpenBolt(filepath.Join(dir, "queue.db"), nil)
	if err != nil {
		return err
	}
	defer q.Close()
	db, err := store.Open(filepath.Join(dir, runtime.DBFile), nil)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := runtime.OpenPipeline(db, pipelineConfig())
	if err != nil {
		return err
	}
	defer p.Close()
	ctx := context.Background()
	rec, err := p.Recover(ctx)
	if err != nil {
		return err
	}
	say("RECOVERED lost=%d", rec.Lost)
	now := issued.Add(time.Minute)
	recs, err := q.Next(ctx, agentKey.DID().String(), 0, 1<<20, now)
	if err != nil {
		return err
	}
	for _, r := range recs {
		say("PRESENT %d", r.Seq)
	}
	say("READY")
	if !final {
		for s := range senders {
			go enqueue(ctx, q, boot, s)
		}
	}
	return drainQueue(ctx, q, p, final)
}

// pipelineConfig is the agent: owner-controlled, accepting comms,
// plaintext allowed (MLS is not under test here), at-most-once notify to
// an application that prints each delivery.
func pipelineConfig() runtime.PipelineConfig {
	clk := clocktest.New(issued.Add(time.Minute))
	s, err := session.New(session.Config{Key: agentKey, Clock: clk})
	if err != nil {
		panic(err)
	}
	app := deliver.HandlerFunc(func(ctx context.Context, d deliver.Delivery) (deliver.Outcome, error) {
		say("DELIVERED %s", d.ObjectID)
		return deliver.Outcome{Handler: "app", OK: true}, nil
	})
	return runtime.PipelineConfig{
		Key: agentKey, Owner: ownerKey.DID(), Purposes: purpose.Set{"comms:*"}, AllowPlaintext: true,
		Routes:   []deliver.Route{{Pattern: "*", Name: "app", Handler: app}},
		Sessions: sessions.Sessions{S: s}, Clock: clk,
	}
}

// enqueue queues objects from sender s until the power goes, as the relay
// does for a sleeping agent, and prints each one queued.
func enqueue(ctx context.Context, q queue.Store, boot, s int) {
	from := seedKey(byte(0x40 + s))
	b := queue.DefaultBounds()
	b.MaxMessages, b.MaxPerPeer, b.MaxBytes = 1<<20, 1<<20, 1<<30
	for i := 0; ; i++ {
		id := fmt.Sprintf("b%d-s%d-%d", boot, s, i)
		body, err := objectBody(from, id)
		if err != nil {
			say("ERROR %v", err)
			return
		}
		r, err := q.Enqueue(ctx, queue.Record{Agent: agentKey.DID().String(), From: from.DID().String(), Body: body}, b, issued)
		if err != nil {
			say("ERROR enqueue: %v", err)
			return
		}
		say("QUEUED %d %s", r.Seq, id)
	}
}

// objectBody is the queued JSON-RPC body (A2A 1.0 SendMessage) carrying a
// plaintext Governed Object by from with id.
func objectBody(from *did.PrivateKey, id string) ([]byte, error) {
	o, err := governed.Sign(from, governed.Template{ID: id, IssuedAt: issued, Semantic: governed.Semantic{Schema: "urn:torpor:test:powercut"},
		Payload: map[string]string{"id": id}, Purpose: "comms:message", TTL: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	obj, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	part, err := a2a.DataObjectPart{Object: obj}.Part()
	if err != nil {
		return nil, err
	}
	req, err := a2a.NewSendMessage(json.RawMessage(`1`), a2a.Version10, a2a.NewUserMessage("m-"+id, "", part))
	if err != nil {
		return nil, err
	}
	return json.Marshal(req)
}

// drainQueue drains the agent's queue in batches of 16, each acknowledged
// after its commit; an empty queue is polled again after 20ms (the
// senders fill it), or ends the drain with final.
func drainQueue(ctx context.Context, q queue.Store, p *runtime.Pipeline, final bool) error {
	me := agentKey.DID().String()
	now := issued.Add(time.Minute)
	var after uint64
	for {
		recs, err := q.Next(ctx, me, after, 16, now)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			if final {
				say("DONE")
				return nil
			}
			time.Sleep(20 * time.Millisecond) // the senders run in real time
			continue
		}
		batch := make([]drain.Record, len(recs))
		for i, r := range recs {
			batch[i] = drain.Record{Seq: r.Seq, From: r.From, Body: r.Body}
		}
		if _, err := p.Batch(ctx, batch, func(ctx context.Context, seqs []uint64) error { return q.Ack(ctx, me, seqs) }); err != nil {
			return err
		}
		after = recs[len(recs)-1].Seq
	}
}
