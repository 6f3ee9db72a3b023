package mqttsession

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/eclipse/paho.golang/autopaho/queue"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/internal/benchcpu"
)

func mustQueue(t testing.TB, db *bolt.DB, o *QueueOptions) *Queue {
	t.Helper()
	q, err := OpenQueue(db, "mqtt-queue", o)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// drain pops every message in order, removing each.
func drain(t testing.TB, q *Queue) []string {
	t.Helper()
	var out []string
	for {
		e, err := q.Peek()
		if errors.Is(err, queue.ErrEmpty) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Reader()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		out = append(out, string(b))
		if err := e.Remove(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestQueueOrderSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	db := mustOpenDB(t, path)
	q := mustQueue(t, db, nil)
	var want []string
	for i := range 50 {
		m := fmt.Sprintf("m%02d", i)
		want = append(want, m)
		if err := q.Enqueue(strings.NewReader(m)); err != nil {
			t.Fatal(err)
		}
	}
	// Peek + Leave keeps the head in place.
	e, err := q.Peek()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Leave(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = mustOpenDB(t, path)
	q = mustQueue(t, db, nil)
	if n, size, err := q.Len(); err != nil || n != 50 || size != 150 {
		t.Errorf("after reopen Len() = %d, %d, %v; want 50, 150", n, size, err)
	}
	if got := drain(t, q); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("drained %v, want %v", got, want)
	}
	if n, size, _ := q.Len(); n != 0 || size != 0 {
		t.Errorf("after drain Len() = %d, %d; want 0, 0", n, size)
	}
}

func TestQueueBounds(t *testing.T) {
	tests := []struct {
		name string
		o    QueueOptions
		msgs []string
		ok   int // how many fit
	}{
		{"items", QueueOptions{MaxItems: 2}, []string{"a", "b", "c"}, 2},
		{"bytes", QueueOptions{MaxBytes: 5}, []string{"abc", "de", "f"}, 2},
		{"defaults", QueueOptions{}, []string{"a", "b", "c"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := mustQueue(t, mustOpenDB(t, filepath.Join(t.TempDir(), "a.db")), &tt.o)
			for i, m := range tt.msgs {
				err := q.Enqueue(strings.NewReader(m))
				if i < tt.ok && err != nil {
					t.Fatalf("Enqueue(%q) = %v, want nil", m, err)
				}
				if i >= tt.ok && !errors.Is(err, ErrFull) {
					t.Fatalf("Enqueue(%q) = %v, want ErrFull", m, err)
				}
			}
			// Removing one makes room again.
			drain(t, q)
			if err := q.Enqueue(strings.NewReader("z")); err != nil {
				t.Errorf("Enqueue after drain = %v", err)
			}
		})
	}
}

func TestQueueEnqueueTxCommitsWithCaller(t *testing.T) {
	db := mustOpenDB(t, filepath.Join(t.TempDir(), "a.db"))
	q := mustQueue(t, db, nil)
	wait := q.Wait()
	boom := errors.New("caller's own step failed")
	err := db.Update(func(tx *bolt.Tx) error {
		if err := q.EnqueueTx(tx, []byte("rolled back")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	select {
	case <-wait:
		t.Fatal("Wait fired for a transaction that rolled back")
	default:
	}
	if n, _, _ := q.Len(); n != 0 {
		t.Fatalf("a rolled-back EnqueueTx left %d items", n)
	}
	err = db.Update(func(tx *bolt.Tx) error { return q.EnqueueTx(tx, []byte("committed")) })
	if err != nil {
		t.Fatal(err)
	}
	<-wait // closed by the commit; a lost wake-up would hang the test
	if got := drain(t, q); len(got) != 1 || got[0] != "committed" {
		t.Errorf("drained %v, want [committed]", got)
	}
}

func TestQueueWaitAndWaitForEmpty(t *testing.T) {
	q := mustQueue(t, mustOpenDB(t, filepath.Join(t.TempDir(), "a.db")), nil)
	select {
	case <-q.WaitForEmpty():
	default:
		t.Fatal("WaitForEmpty on an empty queue is not closed")
	}
	var wg sync.WaitGroup
	waits := make([]chan struct{}, 8)
	for i := range waits {
		waits[i] = q.Wait()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := q.Enqueue(bytes.NewReader([]byte("x"))); err != nil {
			t.Error(err)
		}
	}()
	for _, w := range waits {
		<-w
	}
	wg.Wait()
	select {
	case <-q.Wait():
	default:
		t.Fatal("Wait on a non-empty queue is not closed")
	}
	empty := q.WaitForEmpty()
	select {
	case <-empty:
		t.Fatal("WaitForEmpty closed while an item is queued")
	default:
	}
	drain(t, q)
	<-empty
}

func TestQueueQuarantine(t *testing.T) {
	db := mustOpenDB(t, filepath.Join(t.TempDir(), "a.db"))
	q := mustQueue(t, db, nil)
	for _, m := range []string{"garbage", "good"} {
		if err := q.Enqueue(strings.NewReader(m)); err != nil {
			t.Fatal(err)
		}
	}
	e, err := q.Peek()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Quarantine(); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, q); len(got) != 1 || got[0] != "good" {
		t.Errorf("after quarantine drained %v, want [good]", got)
	}
	err = db.View(func(tx *bolt.Tx) error {
		b, _ := q.buckets(tx)
		if v := b.bad.Get(seqKey(1)); string(v) != "garbage" {
			t.Errorf("quarantined message = %q, want %q", v, "garbage")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func BenchmarkQueueEnqueueRemove(b *testing.B) {
	q := mustQueue(b, mustOpenDB(b, filepath.Join(b.TempDir(), "a.db")), nil)
	msg := bytes.Repeat([]byte("r"), 512)
	b.ReportAllocs()
	meter := benchcpu.Start(b)
	for b.Loop() {
		if err := q.Enqueue(bytes.NewReader(msg)); err != nil {
			b.Fatal(err)
		}
		e, err := q.Peek()
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Remove(); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}
