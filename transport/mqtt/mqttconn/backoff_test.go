package mqttconn_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/transport/mqtt/mqttconn"
)

// TestJitteredBackoff: nothing before the first attempt, then a wait
// between the floor and a ceiling that doubles from twice the floor up to
// the cap, spread over that whole range.
func TestJitteredBackoff(t *testing.T) {
	b := mqttconn.JitteredBackoff(time.Second, time.Minute)
	if d := b(0); d != 0 {
		t.Errorf("attempt 0 waits %v, want 0", d)
	}
	ceilings := map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 3: 8 * time.Second, 6: time.Minute, 100: time.Minute}
	for attempt, ceil := range ceilings {
		var longest time.Duration
		for range 200 {
			d := b(attempt)
			if d < time.Second || d > ceil {
				t.Fatalf("attempt %d waits %v, want within [1s, %v]", attempt, d, ceil)
			}
			longest = max(longest, d)
		}
		if longest <= ceil/2 && ceil > 2*time.Second {
			t.Errorf("attempt %d: 200 waits all at most %v, never near the ceiling %v", attempt, longest, ceil)
		}
	}
	if d := mqttconn.JitteredBackoff(0, -1)(5); d != time.Millisecond {
		t.Errorf("JitteredBackoff(0, -1) waits %v, want the 1 ms floor", d)
	}
	c := mqttconn.ConstantBackoff(3 * time.Second)
	if c(0) != 0 || c(1) != 3*time.Second || c(7) != 3*time.Second {
		t.Errorf("ConstantBackoff(3s) = %v, %v, %v; want 0, 3s, 3s", c(0), c(1), c(7))
	}
}

// TestStopWhileUnreachable stops a Manager whose broker refuses every
// connection: it reports each failed attempt, waits its backoff on the
// clock, and Disconnect ends it at once; then AwaitConnection says it
// stopped and Publish that no connection is up.
func TestStopWhileUnreachable(t *testing.T) {
	if _, err := mqttconn.Start(mqttconn.Config{}); err == nil {
		t.Fatal("Start without Server succeeded")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every dial is refused
	clk := clocktest.New(start)
	failed := make(chan error, 16)
	waiting := clk.TimerCreated()
	m, err := mqttconn.Start(mqttconn.Config{Server: &url.URL{Scheme: "mqtt", Host: addr}, Clock: clk,
		Backoff: mqttconn.ConstantBackoff(time.Hour), Hooks: mqttconn.Hooks{OnConnectError: func(err error) { failed <- err }}})
	if err != nil {
		t.Fatal(err)
	}
	if err := recv(t, failed, "the failed attempt"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the attempt failed with %v, want the refused connection", err)
	}
	recv(t, waiting, "the backoff")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := m.Disconnect(ctx); err != nil {
		t.Fatalf("Disconnect: %v", err)
	}
	if err := m.AwaitConnection(ctx); !errors.Is(err, mqttconn.ErrStopped) {
		t.Errorf("AwaitConnection after Disconnect = %v, want ErrStopped", err)
	}
	if _, err := m.Publish(ctx, nil); !errors.Is(err, mqttconn.ErrConnectionDown) {
		t.Errorf("Publish after Disconnect = %v, want ErrConnectionDown", err)
	}
}
