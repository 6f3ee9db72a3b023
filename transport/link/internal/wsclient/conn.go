package wsclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// closeTimeout bounds the closing handshake and the write of a control
// frame the reader sends (a pong, a close): real time, as the server is a
// real peer.
const closeTimeout = 5 * time.Second

// ErrClosed is returned by Write after Close or after a close frame was
// sent.
var ErrClosed = errors.New("websocket: connection closed")

// Conn is a client WebSocket connection. One goroutine may Read while
// others Write and Close.
type Conn struct {
	nc          net.Conn
	br          *bufio.Reader
	limit       int64
	subprotocol string

	wmu       sync.Mutex // one frame at a time
	closeSent bool       // under wmu

	rmu  sync.Mutex // one reader at a time
	rerr error      // the sticky read error, under rmu
	done chan struct{}
	once sync.Once

	idle, frame time.Duration // Options.IdleTimeout, Options.FrameTimeout
	rate        int64         // Options.MinReadRate

	dmu    sync.Mutex // guards broken and the read deadline Read sets
	broken bool       // a context ended a Read: the deadline stays past
}

func newConn(nc net.Conn, br *bufio.Reader, limit int64, proto string) *Conn {
	return &Conn{nc: nc, br: br, limit: limit, subprotocol: proto, done: make(chan struct{})}
}

// Subprotocol is the subprotocol the server chose, or "".
func (c *Conn) Subprotocol() string { return c.subprotocol }

// Read returns the next data message and its opcode (OpText or OpBinary),
// answering pings on the way. A close frame from the server ends the
// connection with a *CloseError. When ctx ends, the connection is broken
// and Read returns ctx's cause.
func (c *Conn) Read(ctx context.Context) (Opcode, []byte, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return 0, nil, c.rerr
	}
	stop := watch(ctx, c.setReadDeadline)
	op, msg, err := c.readMessage(true)
	if !stop() || err != nil && ctx.Err() != nil {
		if err == nil {
			err = errors.New("read interrupted")
		}
		err = fmt.Errorf("websocket: %w (%w)", context.Cause(ctx), err)
		c.nc.Close()
	}
	if err != nil {
		c.endRead(err)
		return 0, nil, err
	}
	return op, msg, nil
}

// endRead records the reader's last error and wakes Close.
func (c *Conn) endRead(err error) {
	c.rerr = err
	c.once.Do(func() { close(c.done) })
}

// setReadDeadline sets the read deadline, unless a context's end broke
// the Read (watch sets a time in the past for that): once broken, the
// deadline stays in the past, whatever a frame's deadline would be.
func (c *Conn) setReadDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if c.broken {
		return nil
	}
	if t.Equal(brokenDeadline) {
		c.broken = true
	}
	return c.nc.SetReadDeadline(t)
}

// await waits, up to the idle timeout, for the first byte of the next
// frame and then gives the frame the frame timeout to arrive whole: real
// time, as the server is a real peer (closeTimeout's rule).
func (c *Conn) await() error {
	if c.idle > 0 {
		c.setReadDeadline(time.Now().Add(c.idle))
	}
	if _, err := c.br.Peek(1); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && c.idle > 0 {
			return fmt.Errorf("websocket: no frame within the idle timeout of %v: %w", c.idle, err)
		}
		return err
	}
	if c.frame > 0 {
		c.setReadDeadline(time.Now().Add(c.frame))
	} else if c.idle > 0 {
		c.setReadDeadline(time.Time{})
	}
	return nil
}

// readMessage reads frames up to the end of a data message (Section 5.4),
// handling the control frames between them (Section 5.5). With timed set,
// each frame has the idle and frame timeouts (await); Close reads under
// its own deadline.
func (c *Conn) readMessage(timed bool) (Opcode, []byte, error) {
	var op Opcode
	var msg []byte
	for {
		if timed {
			if err := c.await(); err != nil {
				return 0, nil, c.fail(StatusPolicyViolation, err)
			}
		}
		h, err := readHeader(c.br)
		if err != nil {
			return 0, nil, c.fail(StatusProtocolError, err)
		}
		if timed && c.frame > 0 && c.rate > 0 {
			c.setReadDeadline(time.Now().Add(c.frame + time.Duration(h.length)*time.Second/time.Duration(c.rate)))
		}
		if h.op.control() {
			if err := c.control(h); err != nil {
				return 0, nil, err
			}
			continue
		}
		if (h.op == OpContinuation) != (op != 0) {
			return 0, nil, c.fail(StatusProtocolError, fmt.Errorf("%w: frame 0x%x inside or outside a fragmented message", ErrProtocol, byte(h.op)))
		}
		if int64(len(msg))+h.length > c.limit {
			return 0, nil, c.fail(StatusMessageTooBig, fmt.Errorf("websocket: message over the read limit of %d bytes", c.limit))
		}
		if op == 0 {
			op = h.op
		}
		n := len(msg)
		msg = append(msg, make([]byte, h.length)...)
		if _, err := io.ReadFull(c.br, msg[n:]); err != nil {
			return 0, nil, c.fail(StatusProtocolError, unexpected(err))
		}
		if h.fin {
			return op, msg, nil
		}
	}
}

// control handles a control frame: a ping is answered with a pong of the
// same payload (Section 5.5.2), a pong is ignored (Section 5.5.3), and a
// close frame is echoed (Section 5.5.1) and ends the connection.
func (c *Conn) control(h header) error {
	p := make([]byte, h.length)
	if _, err := io.ReadFull(c.br, p); err != nil {
		return c.fail(StatusProtocolError, unexpected(err))
	}
	switch h.op {
	case OpPing:
		if err := c.writeControl(OpPong, p, false); err != nil && !errors.Is(err, ErrClosed) {
			return c.fail(StatusProtocolError, err)
		}
	case OpClose:
		ce, err := parseClose(p)
		if err != nil {
			return c.fail(StatusProtocolError, err)
		}
		c.writeControl(OpClose, closePayload(ce.Code, ""), true)
		c.nc.Close()
		return ce
	}
	return nil
}

// fail fails the connection (Section 7.1.7): a close frame with code,
// when none was sent, then the TCP connection closed. It returns err.
func (c *Conn) fail(code StatusCode, err error) error {
	var ne net.Error
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &ne) {
		c.writeControl(OpClose, closePayload(code, err.Error()), true)
	}
	c.nc.Close()
	return err
}

// writeControl writes a control frame, bounded by closeTimeout. A close
// frame is written once; nothing is written after it.
func (c *Conn) writeControl(op Opcode, p []byte, closing bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent {
		return ErrClosed
	}
	c.closeSent = closing
	c.nc.SetWriteDeadline(time.Now().Add(closeTimeout))
	defer c.nc.SetWriteDeadline(time.Time{})
	_, err := c.nc.Write(appendFrame(nil, op, p))
	return err
}

// Write sends p as one message of op (OpBinary or OpText) in one frame.
// When ctx ends, the connection is broken (half a frame may be written)
// and Write returns ctx's cause.
func (c *Conn) Write(ctx context.Context, op Opcode, p []byte) error {
	if op != OpBinary && op != OpText {
		return fmt.Errorf("websocket: Write of opcode 0x%x", byte(op))
	}
	frame := appendFrame(make([]byte, 0, len(p)+14), op, p)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent {
		return ErrClosed
	}
	stop := watch(ctx, c.nc.SetWriteDeadline)
	_, err := c.nc.Write(frame)
	if !stop() || err != nil && ctx.Err() != nil {
		c.closeSent = true
		c.nc.Close()
		return fmt.Errorf("websocket: %w", context.Cause(ctx))
	}
	if err != nil {
		c.closeSent = true
		c.nc.Close()
		return fmt.Errorf("websocket: %w", err)
	}
	return nil
}

// Close runs the closing handshake (Section 7.1.2): it sends a close
// frame with code and reason, waits up to closeTimeout for the server's
// (reading and dropping data messages itself when no Read is running),
// and closes the TCP connection.
func (c *Conn) Close(code StatusCode, reason string) error {
	err := c.writeControl(OpClose, closePayload(code, reason), true)
	if c.rmu.TryLock() {
		c.nc.SetReadDeadline(time.Now().Add(closeTimeout))
		for c.rerr == nil {
			if _, _, rerr := c.readMessage(false); rerr != nil {
				c.endRead(rerr)
			}
		}
		c.rmu.Unlock()
	} else {
		t := time.NewTimer(closeTimeout)
		select {
		case <-c.done:
		case <-t.C:
		}
		t.Stop()
	}
	c.nc.Close()
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}
