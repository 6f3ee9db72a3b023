package wsclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// serverFrame is an unmasked frame as a server sends it.
func serverFrame(fin bool, op Opcode, p []byte) []byte {
	b := []byte{byte(op), 0}
	if fin {
		b[0] |= 0x80
	}
	switch {
	case len(p) < 126:
		b[1] = byte(len(p))
	case len(p) <= 0xFFFF:
		b[1] = 126
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	default:
		b[1] = 127
		b = binary.BigEndian.AppendUint64(b, uint64(len(p)))
	}
	return append(b, p...)
}

// readClientFrame reads one frame the client sent, checking it is masked
// (Section 5.3), and returns its opcode and unmasked payload.
func readClientFrame(t *testing.T, br *bufio.Reader) (Opcode, []byte) {
	var h [14]byte
	if _, err := io.ReadFull(br, h[:2]); err != nil {
		t.Errorf("reading the client's frame: %v", err)
		return 0, nil
	}
	if h[1]&0x80 == 0 || h[0]&0x80 == 0 {
		t.Errorf("client frame header %x: not masked or not final", h[:2])
	}
	n := int(h[1] & 0x7F)
	switch n {
	case 126:
		io.ReadFull(br, h[:2])
		n = int(binary.BigEndian.Uint16(h[:2]))
	case 127:
		io.ReadFull(br, h[:8])
		n = int(binary.BigEndian.Uint64(h[:8]))
	}
	var key [4]byte
	io.ReadFull(br, key[:])
	p := make([]byte, n)
	io.ReadFull(br, p)
	for i := range p {
		p[i] ^= key[i&3]
	}
	return Opcode(h[0] & 0x0F), p
}

// TestSplitFragmentedWithPing: a message in three fragments with a ping
// between them, written one byte per TCP write, arrives whole, and the
// ping is answered with a masked pong of the same payload.
func TestSplitFragmentedWithPing(t *testing.T) {
	pong := make(chan []byte, 1)
	var stream []byte
	stream = append(stream, serverFrame(false, OpBinary, []byte("hello, "))...)
	stream = append(stream, serverFrame(true, OpPing, []byte("are you there"))...)
	stream = append(stream, serverFrame(false, OpContinuation, bytes.Repeat([]byte("w"), 300))...)
	stream = append(stream, serverFrame(true, OpContinuation, []byte("!"))...)
	url := rawServer(t, upgraded, func(c net.Conn, br *bufio.Reader) {
		for i := range stream {
			c.Write(stream[i : i+1])
		}
		op, p := readClientFrame(t, br)
		if op == OpPong {
			pong <- p
		}
		br.ReadByte()
	})
	c, err := Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.nc.Close()
	op, msg, err := c.Read(context.Background())
	want := "hello, " + strings.Repeat("w", 300) + "!"
	if err != nil || op != OpBinary || string(msg) != want {
		t.Fatalf("Read = %d %q, %v", op, msg, err)
	}
	select {
	case p := <-pong:
		if string(p) != "are you there" {
			t.Errorf("pong payload %q", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no pong")
	}
}

// TestServerViolations: each violation fails the connection with an
// error and a close frame with the right status to the server; an
// oversized frame is refused from its header, before its payload.
func TestServerViolations(t *testing.T) {
	tests := []struct {
		name   string
		frames []byte
		want   string
		status StatusCode
	}{
		{"masked", []byte{0x82, 0x81, 1, 2, 3, 4, 'x'}, "masked frame", StatusProtocolError},
		{"oversized", []byte{0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0}, "read limit", StatusMessageTooBig},
		{"oversized in fragments", append(serverFrame(false, OpBinary, make([]byte, 600)), 0x80, 126, 2, 0), "read limit", StatusMessageTooBig},
		{"reserved bits", []byte{0xC2, 0}, "reserved bits", StatusProtocolError},
		{"reserved opcode", []byte{0x83, 0}, "reserved opcode", StatusProtocolError},
		{"lone continuation", []byte{0x80, 0}, "fragmented message", StatusProtocolError},
		{"data inside a message", append(serverFrame(false, OpBinary, nil), serverFrame(true, OpText, nil)...), "fragmented message", StatusProtocolError},
		{"long ping", serverFrame(true, OpPing, make([]byte, 126)), "control frame", StatusProtocolError},
		{"fragmented ping", serverFrame(false, OpPing, nil), "control frame", StatusProtocolError},
		{"close of one byte", serverFrame(true, OpClose, []byte{3}), "one byte", StatusProtocolError},
		{"close status 1005", serverFrame(true, OpClose, []byte{0x03, 0xED}), "close status 1005", StatusProtocolError},
		{"close reason", serverFrame(true, OpClose, []byte{0x03, 0xE8, 0xff}), "UTF-8", StatusProtocolError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan []byte, 1)
			url := rawServer(t, upgraded, func(c net.Conn, br *bufio.Reader) {
				c.Write(tt.frames)
				if op, p := readClientFrame(t, br); op == OpClose {
					got <- p
				}
			})
			c, err := Dial(context.Background(), url, &Options{ReadLimit: 1024})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Read(context.Background()); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Read = %v, want an error about %s", err, tt.want)
			}
			select {
			case p := <-got:
				if len(p) < 2 || StatusCode(binary.BigEndian.Uint16(p)) != tt.status {
					t.Errorf("close frame %x, want status %d", p, tt.status)
				}
			case <-time.After(10 * time.Second):
				t.Error("no close frame")
			}
			if _, _, err2 := c.Read(context.Background()); err2 == nil {
				t.Error("a second Read succeeded after the connection failed")
			}
		})
	}
}

// TestCloseWithoutStatus: an empty close frame is StatusNoStatusRcvd and
// is echoed empty (Section 5.5.1: 1005 is never sent).
func TestCloseWithoutStatus(t *testing.T) {
	echo := make(chan []byte, 1)
	url := rawServer(t, upgraded, func(c net.Conn, br *bufio.Reader) {
		c.Write(serverFrame(true, OpClose, nil))
		if op, p := readClientFrame(t, br); op == OpClose {
			echo <- p
		}
	})
	c, err := Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ce *CloseError
	if _, _, err := c.Read(context.Background()); !errors.As(err, &ce) || ce.Code != StatusNoStatusRcvd {
		t.Fatalf("Read = %v", err)
	}
	if p := <-echo; len(p) != 0 {
		t.Errorf("echo %x, want an empty close frame", p)
	}
}

// TestCloseSendsFrameFirst: Close's frame carries its status and a
// reason cut (on a UTF-8 boundary) to fit a control frame.
func TestCloseSendsFrameFirst(t *testing.T) {
	got := make(chan []byte, 1)
	url := rawServer(t, upgraded, func(c net.Conn, br *bufio.Reader) {
		if op, p := readClientFrame(t, br); op == OpClose {
			got <- p
			c.Write(serverFrame(true, OpClose, p))
		}
	})
	c, err := Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(StatusNormalClosure, strings.Repeat("é", 100)); err != nil {
		t.Fatal(err)
	}
	p := <-got
	if StatusCode(binary.BigEndian.Uint16(p)) != StatusNormalClosure || len(p) > maxControl {
		t.Errorf("close frame of %d bytes, status %x", len(p), p[:2])
	}
}

// FuzzReadMessage feeds arbitrary server bytes to the frame reader: it
// must not panic, loop or allocate past its bound, nor return a message
// over the read limit.
func FuzzReadMessage(f *testing.F) {
	f.Add(serverFrame(true, OpBinary, []byte("hi")))
	f.Add(append(serverFrame(false, OpText, []byte("a")), serverFrame(true, OpContinuation, []byte("b"))...))
	f.Add(append(serverFrame(true, OpPing, []byte("p")), serverFrame(true, OpBinary, make([]byte, 300))...))
	f.Add(serverFrame(true, OpClose, []byte{0x03, 0xE8, 'o', 'k'}))
	f.Add([]byte{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		c := newConn(fakeConn{}, bufio.NewReaderSize(bytes.NewReader(in), 16), 512, "")
		for {
			_, msg, err := c.Read(context.Background())
			if err != nil {
				return
			}
			if len(msg) > 512 {
				t.Fatalf("message of %d bytes over the limit of 512", len(msg))
			}
		}
	})
}

// fakeConn is a net.Conn that discards writes (the fuzz target reads
// from its own bufio.Reader).
type fakeConn struct{ net.Conn }

func (fakeConn) Write(p []byte) (int, error)      { return len(p), nil }
func (fakeConn) Close() error                     { return nil }
func (fakeConn) SetDeadline(time.Time) error      { return nil }
func (fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (fakeConn) SetWriteDeadline(time.Time) error { return nil }
