package jsstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/queue/queuetest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// BenchmarkEnqueue: durable enqueues, 16 concurrent senders spread over
// 64 agents (so that compare-and-swap races are those of a fleet, not of
// one hot agent), on one server with fsync on every write and on a
// 3-server cluster with 3 replicas.
func BenchmarkEnqueue(b *testing.B) {
	b.Run("R1-sync-always", func(b *testing.B) {
		srv, err := jsserver.Start(b.TempDir(), jsserver.Options{SyncAlways: true})
		if err != nil {
			b.Fatal(err)
		}
		defer jsserver.Shutdown([]*jsserver.Server{srv})
		benchEnqueue(b, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
	})
	b.Run("R3-cluster", func(b *testing.B) {
		benchEnqueue(b, clusterURLs(cluster(b)))
	})
}

func benchEnqueue(b *testing.B, cfg jsstore.Config) {
	c, err := jsstore.Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	q := c.Queue()
	bounds := queuebounds.Default()
	bounds.MaxMessages, bounds.MaxPerPeer, bounds.MaxBytes, bounds.MaxPeerBytes = 5000, 5000, 1<<30, 1<<30
	var n atomic.Int64
	body := make([]byte, 1024)
	b.SetParallelism(8) // 8 × GOMAXPROCS (2 here) = 16 senders
	b.ResetTimer()
	meter := benchcpu.Start(b) // the embedded servers' CPU among it
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			r := queue.Record{Agent: fmt.Sprint("did:key:bench", i%64), From: queuetest.Alice, Body: body}
			if _, err := q.Enqueue(context.Background(), r, bounds, queuetest.T0); err != nil {
				b.Error(err)
				return
			}
		}
	})
	meter.Stop()
}
