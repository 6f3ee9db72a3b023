package queue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// use runs what a relay does with its queue: a sender's request is
// enqueued under the agent's bounds, the device lists what waits for it
// when it links, and acknowledges what it committed.
func use(q queue.Store) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	bounds := queuebounds.Default()
	const agent = "did:key:z6MkDevice"
	for _, body := range []string{`{"n":1}`, `{"n":2}`} {
		r, err := q.Enqueue(ctx, queue.Record{Agent: agent, From: "did:key:z6MkSender", Body: []byte(body)}, bounds, now)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("queued", r.Seq, "until", r.ExpiresAt.Format(time.DateOnly))
	}
	recs, _ := q.Next(ctx, agent, 0, 10, now)
	for _, r := range recs {
		fmt.Println("listed", r.Seq, string(r.Body))
	}
	if err := q.Ack(ctx, agent, []uint64{recs[0].Seq}); err != nil {
		fmt.Println(err)
	}
	st, _ := q.Stats(ctx, agent, now)
	fmt.Println("left", st.Messages)
	fmt.Println(q.Close())
}

// The bbolt engine keeps the queue in one file.
func ExampleOpenBolt() {
	dir, _ := os.MkdirTemp("", "queue")
	defer os.RemoveAll(dir)
	q, err := queue.OpenBolt(filepath.Join(dir, "queue.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	use(q)
	// Output:
	// queued 1 until 2026-01-09
	// queued 2 until 2026-01-09
	// listed 1 {"n":1}
	// listed 2 {"n":2}
	// left 1
	// <nil>
}

// The record log keeps it in segment files in a directory; what a crash
// cut off the end of the last one is reported, for the relay to log.
func ExampleOpenLog() {
	dir, _ := os.MkdirTemp("", "queue")
	defer os.RemoveAll(dir)
	q, err := queue.OpenLog(filepath.Join(dir, "queue.log"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("torn tails cut:", len(q.TornTails()))
	use(q)
	// Output:
	// torn tails cut: 0
	// queued 1 until 2026-01-09
	// queued 2 until 2026-01-09
	// listed 1 {"n":1}
	// listed 2 {"n":2}
	// left 1
	// <nil>
}
