package mqtt

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/store/replay"
	"github.com/torpor-dev/torpor/transport/broker"
)

type countingDevice struct {
	mu  sync.Mutex
	ops []string
	ch  chan struct{}
}

func (d *countingDevice) Execute(_ context.Context, c Command) Result {
	d.mu.Lock()
	d.ops = append(d.ops, c.Op)
	d.mu.Unlock()
	d.ch <- struct{}{}
	return OK(nil)
}

// TestInboxRunsStoredCommandsAtStart: a command stored in the inbox (and
// acknowledged to the broker) but not admitted when the device stopped
// runs when the client starts again, before any new command.
func TestInboxRunsStoredCommandsAtStart(t *testing.T) {
	b, err := broker.Start(broker.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	clk := clocktest.New(t0)
	db, err := store.Open(filepath.Join(t.TempDir(), "agent.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rc, _ := replay.Open(db, &replay.Options{Clock: clk})
	l, _ := ledger.Open(db, &ledger.Options{Clock: clk})
	op, dev := didtest.Key(t, 1), didtest.Key(t, 2)
	o, err := SignCommand(op, CommandSpec{Device: dev.DID(), Seq: 3, Op: OpDrain, IssuedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := o.MarshalJSON()
	d := &countingDevice{ch: make(chan struct{}, 4)}
	c, err := newClient(Config{Broker: b.URL(), Name: "dev-3", Key: dev, Operators: []did.DID{op.DID()},
		DB: db, Replay: rc, Ledger: l, Device: d, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// As a previous run left it: stored, acknowledged, not admitted.
	if _, err := c.storeInbox([]stored{{Payload: j, ContentType: ContentTypeJSON, At: t0}}); err != nil {
		t.Fatal(err)
	}
	c.cancel()

	c, err = Start(Config{Broker: b.URL(), Name: "dev-3", Key: dev, Operators: []did.DID{op.DID()},
		DB: db, Replay: rc, Ledger: l, Device: d, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abort()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	select {
	case <-d.ch:
	case <-ctx.Done():
		t.Fatal("the stored command never ran")
	}
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if left, err := c.loadInbox(); err != nil || len(left) != 0 {
		t.Errorf("inbox after the command ran = %v, %v; want empty", left, err)
	}
	if d.ops[0] != OpDrain {
		t.Errorf("ran %v", d.ops)
	}
}
