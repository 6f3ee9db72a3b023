package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/syncbuf"
)

// runningRelay is run of a relay in the test's own process, on loopback
// listeners.
type runningRelay struct {
	http, mqtt string          // the addresses it serves on
	logs       *syncbuf.Buffer // what it logged, as text
	cancel     context.CancelFunc
	done       chan error
	once       sync.Once
	err        error
}

// startRun runs the relay on the data directory dir with loopback
// listeners and argv, and waits up to a minute until it serves. It
// returns run's error if run ended first; its logs are there either way.
// A relay still running when the test ends is stopped then.
func startRun(t *testing.T, dir string, argv ...string) (*runningRelay, error) {
	t.Helper()
	a, err := parseArgs(append([]string{"--listen", "127.0.0.1:0", "--mqtt-listen", "127.0.0.1:0", "--data-dir", dir}, argv...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make(chan [2]string, 1)
	a.ready = func(h, m string) { addrs <- [2]string{h, m} }
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningRelay{logs: new(syncbuf.Buffer), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- run(ctx, a, slog.New(slog.NewTextHandler(r.logs, nil))) }()
	t.Cleanup(func() { r.stop() })
	select {
	case got := <-addrs:
		r.http, r.mqtt = got[0], got[1]
		return r, nil
	case err := <-r.done:
		r.once.Do(func() { cancel() })
		return r, err
	case <-time.After(time.Minute):
		t.Fatal("the relay neither started nor stopped in a minute")
	}
	return r, nil
}

// stop stops the relay, once, and returns the error run ended with (nil
// after a stop that went well).
func (r *runningRelay) stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}
