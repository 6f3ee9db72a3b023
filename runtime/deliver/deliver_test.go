package deliver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/internal/nettest"
)

// The test binary doubles as an exec handler: with TORPOR_DELIVER_HELPER
// set it behaves as the mode that variable names.
func TestMain(m *testing.M) {
	if mode := os.Getenv("TORPOR_DELIVER_HELPER"); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	in, _ := io.ReadAll(os.Stdin)
	var d Delivery
	if err := json.Unmarshal(in, &d); err != nil {
		fmt.Fprintln(os.Stderr, "bad stdin:", err)
		return 3
	}
	switch mode {
	case "accept":
		fmt.Printf(`{"effectId":"eff-%s","purpose":%q,"env":%q}`, d.ObjectID, d.Purpose, os.Getenv("TORPOR_PURPOSE"))
		return 0
	case "decline":
		fmt.Fprintln(os.Stderr, "not today")
		return 1
	case "hang":
		select {}
	}
	return 4
}

func testDelivery() Delivery {
	return Delivery{
		Object:   json.RawMessage(`{"id":"o1"}`),
		ObjectID: "o1", Issuer: "did:key:zAlice", Purpose: "comms:message",
		DequeuedAt: time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC),
	}
}

func TestExec(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		path, mode string
		wantOK     bool
		wantErr    error // nil, ErrNotStarted
		wantEffect string
		wantDetail string
	}{
		{"accept", self, "accept", true, nil, "eff-o1", "exit 0"},
		{"decline", self, "decline", false, nil, "", "not today"},
		{"missing program", filepath.Join(t.TempDir(), "nope"), "", false, ErrNotStarted, "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Exec{Path: tt.path, Env: []string{"TORPOR_DELIVER_HELPER=" + tt.mode}}
			o, err := h.Deliver(context.Background(), testDelivery())
			if (tt.wantErr == nil) != (err == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("Deliver err = %v, want %v", err, tt.wantErr)
			}
			if o.OK != tt.wantOK || o.EffectID != tt.wantEffect || !strings.Contains(o.Detail, tt.wantDetail) {
				t.Fatalf("Deliver = %+v, want OK %v effect %q detail ~%q", o, tt.wantOK, tt.wantEffect, tt.wantDetail)
			}
			if tt.wantOK && !strings.Contains(string(o.Receipt), `"env":"comms:message"`) {
				t.Errorf("receipt %s: environment TORPOR_PURPOSE not passed", o.Receipt)
			}
		})
	}
}

func TestExecTimeout(t *testing.T) {
	self, _ := os.Executable()
	clk := clocktest.New(time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC))
	h := &Exec{Path: self, Env: []string{"TORPOR_DELIVER_HELPER=hang"}, Timeout: time.Minute, Clock: clk}
	created := clk.TimerCreated()
	done := make(chan error, 1)
	go func() {
		_, err := h.Deliver(context.Background(), testDelivery())
		done <- err
	}()
	<-created
	clk.Advance(time.Minute)
	err := <-done
	if !errors.Is(err, errTimeout) || errors.Is(err, ErrNotStarted) {
		t.Fatalf("Deliver of a hanging program: err = %v, want errTimeout (and not ErrNotStarted: it may have acted)", err)
	}
}

// TestExecTimeoutIsRealTime: the program runs outside the agent, so its
// timeout is real time even on a scaled clock (the clock package's rule): a
// minute of scaled time does not end it, a real minute does.
func TestExecTimeoutIsRealTime(t *testing.T) {
	self, _ := os.Executable()
	base := clocktest.New(time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC))
	scaled, err := clock.NewScaled(base, 60)
	if err != nil {
		t.Fatal(err)
	}
	h := &Exec{Path: self, Env: []string{"TORPOR_DELIVER_HELPER=hang"}, Timeout: time.Minute, Clock: scaled}
	created := base.TimerCreated()
	done := make(chan error, 1)
	go func() {
		_, err := h.Deliver(context.Background(), testDelivery())
		done <- err
	}()
	<-created
	base.Advance(time.Second) // a minute of scaled time
	if base.Pending() != 1 {
		t.Fatalf("%d timers pending after a scaled minute, want the real minute's timer still pending", base.Pending())
	}
	base.Advance(59 * time.Second)
	if err := <-done; !errors.Is(err, errTimeout) {
		t.Fatalf("Deliver of a hanging program after a real minute: err = %v, want errTimeout", err)
	}
}

// shortTempDir returns a directory whose path is short enough for a Unix
// socket name (108 bytes).
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "td")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestUnix(t *testing.T) {
	sock := filepath.Join(shortTempDir(t), "app.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Delivery, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d Delivery
		if r.URL.Path != "/objects" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request line", 400)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		got <- d
		if d.Purpose == "comms:receipt" {
			http.Error(w, "declined", http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Torpor-Effect-Id", "app-"+d.ObjectID)
		io.WriteString(w, "stored")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	h := NewUnix(sock, "/objects", nil)
	d := testDelivery()
	o, err := h.Deliver(context.Background(), d)
	if err != nil || !o.OK || o.EffectID != "app-o1" || string(o.Receipt) != "stored" {
		t.Fatalf("Deliver = %+v, %v", o, err)
	}
	if g := <-got; g.ObjectID != d.ObjectID || string(g.Object) != string(d.Object) {
		t.Fatalf("application received %+v", g)
	}

	d.Purpose = "comms:receipt"
	o, err = h.Deliver(context.Background(), d)
	<-got
	if err != nil || o.OK || !strings.Contains(o.Detail, "422") {
		t.Fatalf("declined Deliver = %+v, %v; want OK false with status 422", o, err)
	}

	srv.Close()
	os.Remove(sock)
	_, err = h.Deliver(context.Background(), d)
	if !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Deliver to a missing socket: err = %v, want ErrNotStarted", err)
	}
}

// TestUnixAnswerFraming: the application's answer is read whether it
// comes chunked (a flushed net/http body), with Content-Length, or until
// the application closes the connection (a raw server), and a receipt
// longer than maxReceipt is cut there.
func TestUnixAnswerFraming(t *testing.T) {
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "app.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/long" {
			w.Header().Set("Content-Length", strconv.Itoa(maxReceipt+10))
			io.WriteString(w, strings.Repeat("r", maxReceipt+10))
			return
		}
		for _, part := range []string{`{"effectId":`, `"chunked-1"}`} {
			io.WriteString(w, part)
			w.(http.Flusher).Flush()
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	o, err := NewUnix(sock, "/", nil).Deliver(context.Background(), testDelivery())
	if err != nil || !o.OK || o.EffectID != "chunked-1" || o.Detail != "200 OK" {
		t.Errorf("chunked answer: %+v, %v", o, err)
	}
	o, err = NewUnix(sock, "/long", nil).Deliver(context.Background(), testDelivery())
	if err != nil || !o.OK || len(o.Receipt) != maxReceipt {
		t.Errorf("long answer: receipt %d bytes, %v; want %d", len(o.Receipt), err, maxReceipt)
	}

	raw := filepath.Join(dir, "raw.sock")
	answer := "HTTP/1.1 201 Created\r\nTorpor-Effect-Id: e-7\r\n\r\nuntil close"
	serveRaw(t, raw, func(c net.Conn) { io.WriteString(c, answer) })
	o, err = NewUnix(raw, "/", nil).Deliver(context.Background(), testDelivery())
	if err != nil || !o.OK || o.EffectID != "e-7" || string(o.Receipt) != "until close" {
		t.Errorf("answer until close: %+v, %v", o, err)
	}

	bad := filepath.Join(dir, "bad.sock")
	serveRaw(t, bad, func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort") })
	o, err = NewUnix(bad, "/", nil).Deliver(context.Background(), testDelivery())
	if err == nil || o.OK || errors.Is(err, ErrNotStarted) {
		t.Errorf("truncated answer: %+v, %v; want an error (not ErrNotStarted)", o, err)
	}
}

// TestUnixTimeout: an application that took the request and never answers
// is given up after Timeout (real time: it runs outside the agent) with
// errTimeout, and not as ErrNotStarted (it may have acted). A hand-off
// whose connection the timeout cut before the request reached the
// application is ErrNotStarted; on a loaded machine (qemu-user at load
// 19 took more than 50 ms to connect a Unix socket) the test meets that
// first and tries again with a longer timeout.
func TestUnixTimeout(t *testing.T) {
	sock := filepath.Join(shortTempDir(t), "app.sock")
	serveRaw(t, sock, func(c net.Conn) { io.Copy(io.Discard, c) })
	h := NewUnix(sock, "/", nil)
	for h.Timeout = 50 * time.Millisecond; ; h.Timeout *= 4 {
		_, err := h.Deliver(context.Background(), testDelivery())
		if errors.Is(err, ErrNotStarted) && h.Timeout < 10*time.Second {
			continue // cut before the application had the request
		}
		if !errors.Is(err, errTimeout) || errors.Is(err, ErrNotStarted) {
			t.Fatalf("Deliver to a silent application (timeout %v): err = %v, want errTimeout", h.Timeout, err)
		}
		return
	}
}

// serveRaw accepts connections on a Unix socket at sock, reads the
// request's head and hands the connection to answer, then closes it.
func serveRaw(t *testing.T, sock string, answer func(net.Conn)) {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	nettest.Serve(ln, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		for line, err := br.ReadString('\n'); err == nil && line != "\r\n"; line, err = br.ReadString('\n') {
		}
		answer(c)
	})
}

// startBroker runs an embedded MQTT 5 broker on loopback and returns its URL.
func startBroker(t testing.TB) (*mqtt.Server, string) {
	t.Helper()
	s := mqtt.New(&mqtt.Options{InlineClient: true, Logger: slog.New(slog.DiscardHandler)})
	if err := s.AddHook(new(auth.AllowHook), nil); err != nil {
		t.Fatal(err)
	}
	tcp := listeners.NewTCP(listeners.Config{ID: "t", Address: "127.0.0.1:0"})
	if err := s.AddListener(tcp); err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, "mqtt://" + tcp.Address()
}

func TestMQTT(t *testing.T) {
	broker, url := startBroker(t)
	got := make(chan packets.Packet, 1)
	if err := broker.Subscribe("torpor/objects/#", 1, func(_ *mqtt.Client, _ packets.Subscription, pk packets.Packet) {
		got <- pk
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub, err := DialMQTT(ctx, url, "agent-test")
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(context.Background())

	h := &MQTT{Publisher: pub, Topic: "torpor/objects/{purpose}"}
	d := testDelivery()
	d.IdempotencyKey = "idem-1"
	o, err := h.Deliver(ctx, d)
	if err != nil || !o.OK {
		t.Fatalf("Deliver = %+v, %v", o, err)
	}
	pk := <-got
	if pk.TopicName != "torpor/objects/comms/message" || string(pk.Properties.CorrelationData) != "idem-1" || pk.Properties.ContentType != "application/json" {
		t.Fatalf("broker got topic %q correlation %q content type %q", pk.TopicName, pk.Properties.CorrelationData, pk.Properties.ContentType)
	}
	var rd Delivery
	if err := json.Unmarshal(pk.Payload, &rd); err != nil || rd.ObjectID != "o1" {
		t.Fatalf("payload %s: %v", pk.Payload, err)
	}
}

type downPublisher struct{}

func (downPublisher) Publish(context.Context, Message) error {
	return fmt.Errorf("connection down (%w)", ErrNotStarted)
}

func TestRouter(t *testing.T) {
	rec := &Recorder{}
	r, err := NewRouter(
		Route{Pattern: "comms:message", Name: "chat", Handler: rec},
		Route{Pattern: "action:*", Name: "bus", Handler: &MQTT{Publisher: downPublisher{}, Topic: "t"}},
		Route{Pattern: "comms:*", Name: "rest", Handler: rec},
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		purpose, wantName string
		wantErr           error
	}{
		{"comms:message", "chat", nil},
		{"comms:receipt", "rest", nil},
		{"action:capture", "bus", ErrNotStarted},
		{"coordination:proposal", "", ErrNoRoute},
	}
	for _, tt := range tests {
		d := testDelivery()
		d.Purpose = tt.purpose
		o, err := r.Deliver(context.Background(), d)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) || o.Handler != tt.wantName {
			t.Errorf("Deliver(%q) = %q, %v; want %q, %v", tt.purpose, o.Handler, err, tt.wantName, tt.wantErr)
		}
	}
	if !errors.Is(ErrNoRoute, ErrNotStarted) {
		t.Error("ErrNoRoute must wrap ErrNotStarted")
	}
	if _, err := NewRouter(Route{Pattern: "bad pattern", Handler: rec}); err == nil {
		t.Error("NewRouter accepted an invalid pattern")
	}
}

// TestMQTTBrokerDown: with no broker to connect to, a publication waits at
// most the connect timeout (on the clock) and is reported not started, so
// an action's key may be released.
func TestMQTTBrokerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	pub, err := NewMQTT("mqtt://"+addr, "agent-down")
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(context.Background())
	clk := clocktest.New(time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC))
	pub.Clock, pub.ConnectTimeout = clk, 5*time.Second
	created := clk.TimerCreated()
	done := make(chan error, 1)
	go func() {
		_, err := (&MQTT{Publisher: pub, Topic: "t"}).Deliver(context.Background(), testDelivery())
		done <- err
	}()
	<-created
	clk.Advance(5 * time.Second)
	if err := <-done; !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Deliver with the broker down: err = %v, want ErrNotStarted", err)
	}
}
