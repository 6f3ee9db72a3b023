package wsclient

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestReadDeadlines: a server that sends nothing ends a Read after
// IdleTimeout; one that starts a frame and trickles the rest ends it after
// FrameTimeout; pings keep a quiet connection alive. The timeouts are real
// time (the server is a real peer), short here. The pinged case keeps 4/5
// of its idle timeout as margin per ping: on a loaded machine a 150 ms
// sleep came back late enough to end the read (CI, 2026-12-05).
func TestReadDeadlines(t *testing.T) {
	const idle, frame = 300 * time.Millisecond, 300 * time.Millisecond
	const pingedIdle = time.Second
	tests := []struct {
		name   string
		idle   time.Duration
		script func(c net.Conn)
		want   string // "" is a message read
	}{
		{"silent", idle, func(c net.Conn) { time.Sleep(5 * idle) }, "idle timeout"},
		{"trickled frame", idle, func(c net.Conn) {
			for _, b := range serverFrame(true, OpBinary, []byte("slowly")) {
				c.Write([]byte{b})
				time.Sleep(frame / 3)
			}
		}, "timeout"},
		{"pinged", pingedIdle, func(c net.Conn) {
			for range 8 { // 1.6 s of pings: more than the idle timeout
				time.Sleep(pingedIdle / 5)
				c.Write(serverFrame(true, OpPing, nil))
			}
			c.Write(serverFrame(true, OpBinary, []byte("late")))
			time.Sleep(pingedIdle)
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := rawServer(t, upgraded, func(c net.Conn, br *bufio.Reader) {
				go func() {
					for {
						if _, err := br.ReadByte(); err != nil {
							return
						}
					}
				}()
				tt.script(c)
			})
			c, err := Dial(context.Background(), url, &Options{IdleTimeout: tt.idle, FrameTimeout: frame, MinReadRate: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(StatusNormalClosure, "")
			start := time.Now()
			_, p, err := c.Read(context.Background())
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Read: %v, want the message", err)
			case tt.want == "" && string(p) != "late":
				t.Fatalf("Read %q, want late", p)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Read: %q %v, want an error saying %q", p, err, tt.want)
			case tt.want != "" && time.Since(start) > idle+frame+time.Second:
				t.Fatalf("Read ended after %v", time.Since(start))
			}
		})
	}
}
