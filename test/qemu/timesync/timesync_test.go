package timesync

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestSync: against a host whose clock is 1.5 s ahead, Sync steps the
// guest's clock by about 1.5 s; the residual offset is what the stepper
// leaves (here it steps a pretend clock that the second round measures).
func TestSync(t *testing.T) {
	var ahead atomic.Int64 // the host's clock minus the guest's, ns
	ahead.Store(int64(1500 * time.Millisecond))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(strconv.FormatInt(time.Now().UnixNano()+ahead.Load(), 10)))
	}))
	defer srv.Close()
	var stepped time.Duration
	before, after, err := Sync(context.Background(), srv.URL, 3, func(to time.Time) error {
		stepped = time.Until(to)
		ahead.Add(-int64(stepped)) // the guest's clock is now where the host says
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := before.Offset - 1500*time.Millisecond; d < -before.RTT || d > before.RTT {
		t.Errorf("offset before %v, want 1.5 s ± %v", before, before.RTT)
	}
	if d := stepped - 1500*time.Millisecond; d < -50*time.Millisecond || d > 50*time.Millisecond {
		t.Errorf("stepped by %v, want about 1.5 s", stepped)
	}
	if after.Offset < -after.RTT-before.RTT || after.Offset > after.RTT+before.RTT {
		t.Errorf("offset after %v, want within the round trips", after)
	}
}

func TestQueryBadAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("noon"))
	}))
	defer srv.Close()
	if _, err := Query(context.Background(), srv.Client(), srv.URL); err == nil {
		t.Error("Query accepted an answer that is not a time")
	}
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	s, err := Query(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if s.Offset < -s.RTT || s.Offset > s.RTT {
		t.Errorf("the same machine's clock: offset %v", s)
	}
}
