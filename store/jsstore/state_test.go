package jsstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue"
)

// TestFullQueueStateFits: the queue state of an agent holding MaxMessages
// records, each from its own sender and with the largest numbers, is
// stored by JetStream under the default max_payload, and one half again
// as large is not (the bound is not far below the real limit).
func TestFullQueueStateFits(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	defer jsserver.Shutdown([]*jsserver.Server{srv})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Open(ctx, Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	max := c.MaxMessages()
	if max < 1000 || max > 10000 {
		t.Fatalf("MaxMessages = %d with the default 1 MiB max_payload, want a few thousand", max)
	}
	s := fullState(max)
	if err := c.Queue().store(ctx, &s, 0); err != nil {
		t.Fatalf("storing a full queue state of %d records: %v", max, err)
	}
	_, rev, err := c.Queue().load(ctx, s.Agent)
	if err != nil {
		t.Fatal(err)
	}
	s = fullState(max * 3 / 2)
	if err := c.Queue().store(ctx, &s, rev); err == nil || errors.Is(err, errConflict) {
		t.Errorf("storing a state half again over MaxMessages = %v, want a refusal for its size", err)
	}
}

// fullState is a queue state of n records, each from its own sender, with
// the largest numbers.
func fullState(n int) qstate {
	const big = 1<<63 - 1
	s := qstate{Agent: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", Last: big}
	for i := range n {
		s.Live = append(s.Live, entry{Seq: big - uint64(i), Msg: big, Size: big, Kind: queue.KindHandshake,
			From: fmt.Sprintf("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta%06d", i), Enqueued: -big, Expires: big})
	}
	return s
}
