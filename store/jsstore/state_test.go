package jsstore

import (
	"context"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
)

// TestFullMarkerFits: a marker naming MaxMessages records, with the
// largest seqs, is stored by JetStream under the default max_payload and
// read back whole.
func TestFullMarkerFits(t *testing.T) {
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
	const big = 1<<64 - 1
	gone := make([]uint64, max)
	for i := range gone {
		gone[i] = big - uint64(i)
	}
	q := c.Queue()
	m, err := markerMsg(q.subject("did:key:full"), big, gone)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.publish(ctx, m, 0); err != nil {
		t.Fatalf("storing a marker naming %d records: %v", max, err)
	}
	av := q.lock(q.subject("did:key:full"))
	defer av.mu.Unlock()
	if err := q.refresh(ctx, q.subject("did:key:full"), av, nil); err != nil || av.v.MaxSeq != big || len(av.v.Markers) != 1 {
		t.Errorf("reading the marker back = %v, view %+v", err, av.v)
	}
}
