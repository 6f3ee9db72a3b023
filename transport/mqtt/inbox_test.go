package mqtt

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed/governedtest"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/transport/broker"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// countingHandler answers every message ok at once and records its id.
type countingHandler struct {
	db  *bolt.DB
	mu  sync.Mutex
	ids []string
	ch  chan struct{}
}

func (h *countingHandler) Order(b []*Delivery) []*Delivery { return b }

func (h *countingHandler) Handle(_ context.Context, d *Delivery) {
	defer d.Done()
	h.mu.Lock()
	h.ids = append(h.ids, d.Object.ID)
	h.mu.Unlock()
	err := h.db.Update(func(tx *bolt.Tx) error {
		_, err := d.Complete(tx, d.Object.ID, map[string]string{"outcome": "ok"})
		return err
	})
	if err != nil {
		panic(err)
	}
	h.ch <- struct{}{}
}

func (h *countingHandler) Interrupted(*bolt.Tx, *Delivery, Admission) (any, bool, error) {
	return nil, false, nil
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
	op, dev := didtest.Key(t, 1), didtest.Key(t, 2)
	o := governedtest.Command(t, op, 3, t0, nil)
	j, _ := o.MarshalJSON()
	d := &countingHandler{db: db, ch: make(chan struct{}, 4)}
	c, err := newClient(Config{Broker: b.URL(), Name: "dev-3", Key: dev, DB: db, Handler: d, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// As a previous run left it: stored, acknowledged, not admitted.
	if _, err := c.storeInbox([]stored{{Payload: j, ContentType: envelope.ContentTypeJSON, At: t0}}); err != nil {
		t.Fatal(err)
	}
	c.cancel()

	c, err = Start(Config{Broker: b.URL(), Name: "dev-3", Key: dev, DB: db, Handler: d, Clock: clk})
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
	if len(d.ids) != 1 || d.ids[0] != o.ID {
		t.Errorf("handled %v, want %s", d.ids, o.ID)
	}
}
