package procs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/torpor-dev/torpor/runtime/deliver"
)

// Sink is the application side of one agent: an HTTP server on a Unix
// socket that the agent's "unix" handler posts each accepted object to
// (runtime/deliver.Unix). It answers 200 with a receipt naming the effect,
// and reports each delivery to OnDelivery.
type Sink struct {
	Socket string
	srv    *http.Server
	ln     net.Listener

	mu sync.Mutex
	// mu guards the following fields.
	got  []Received
	wait chan struct{} // closed and replaced on every delivery
}

// Received is a delivery as the application got it, with the path the
// agent posted it to ("/message" or "/action").
type Received struct {
	Path string
	deliver.Delivery
}

// StartSink listens on socket and serves until Close. onDelivery, if set,
// is called for every delivery (from the server's goroutines).
func StartSink(socket string, onDelivery func(Received)) (*Sink, error) {
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	s := &Sink{Socket: socket, ln: ln, wait: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d deliver.Delivery
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&d); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec := Received{Path: r.URL.Path, Delivery: d}
		n := s.add(rec)
		if onDelivery != nil {
			onDelivery(rec)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"effectId":"demo-app-%d","status":"done"}`, n)
	})}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *Sink) add(r Received) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, r)
	close(s.wait)
	s.wait = make(chan struct{})
	return len(s.got)
}

// Received returns every delivery so far.
func (s *Sink) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.got...)
}

// Await waits until match accepts one of the deliveries.
func (s *Sink) Await(ctx context.Context, match func(Received) bool) (Received, error) {
	for {
		s.mu.Lock()
		got, wait := s.got, s.wait
		s.mu.Unlock()
		for _, r := range got {
			if match(r) {
				return r, nil
			}
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return Received{}, ctx.Err()
		}
	}
}

// Close stops the server.
func (s *Sink) Close() error {
	err := s.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
