// Package qmp is a minimal client of the QEMU Machine Protocol
// (docs/interop/qmp-spec.rst in QEMU): connect to the socket QEMU opens
// with -qmp, negotiate capabilities, run commands such as
// system_powerdown and read their results. Asynchronous events are kept
// for the caller.
package qmp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Error is an error reply from QEMU.
type Error struct {
	Class string `json:"class"`
	Desc  string `json:"desc"`
}

func (e *Error) Error() string { return fmt.Sprintf("qmp: %s: %s", e.Class, e.Desc) }

// Event is an asynchronous event QEMU sent.
type Event struct {
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data,omitempty"`
	Timestamp struct {
		Seconds      int64 `json:"seconds"`
		Microseconds int64 `json:"microseconds"`
	} `json:"timestamp"`
}

// Conn is a QMP connection. Commands are run one at a time.
type Conn struct {
	c  net.Conn
	r  *bufio.Reader
	mu sync.Mutex
	// mu guards all following fields and serialises commands.
	events []Event
}

type message struct {
	QMP    json.RawMessage `json:"QMP"`
	Return json.RawMessage `json:"return"`
	Error  *Error          `json:"error"`
	Event  string          `json:"event"`
	ID     json.RawMessage `json:"id"`
}

// Dial connects to the Unix socket at path, reads QEMU's greeting and
// enters command mode (qmp_capabilities). timeout bounds the whole
// handshake and each later command.
func Dial(path string, timeout time.Duration) (*Conn, error) {
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return nil, fmt.Errorf("qmp: %w", err)
	}
	q := &Conn{c: c, r: bufio.NewReader(c)}
	c.SetDeadline(time.Now().Add(timeout))
	m, _, err := q.read()
	if err == nil && m.QMP == nil {
		err = errors.New("qmp: no greeting from QEMU")
	}
	if err == nil {
		_, err = q.executeLocked("qmp_capabilities", nil)
	}
	c.SetDeadline(time.Time{})
	if err != nil {
		c.Close()
		return nil, err
	}
	return q, nil
}

func (q *Conn) read() (message, []byte, error) {
	line, err := q.r.ReadBytes('\n')
	if err != nil {
		return message{}, nil, fmt.Errorf("qmp: reading: %w", err)
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return message{}, nil, fmt.Errorf("qmp: decoding %q: %w", line, err)
	}
	return m, line, nil
}

// Execute runs command with args (nil for none) and returns its "return"
// value, or *Error when QEMU refused it. Events that arrive meanwhile are
// kept for Events.
func (q *Conn) Execute(command string, args any) (json.RawMessage, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.c.SetDeadline(time.Now().Add(30 * time.Second))
	defer q.c.SetDeadline(time.Time{})
	return q.executeLocked(command, args)
}

func (q *Conn) executeLocked(command string, args any) (json.RawMessage, error) {
	req := map[string]any{"execute": command}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := q.c.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("qmp: %s: %w", command, err)
	}
	for {
		m, line, err := q.read()
		if err != nil {
			return nil, err
		}
		switch {
		case m.Event != "":
			var ev Event
			if err := json.Unmarshal(line, &ev); err == nil {
				q.events = append(q.events, ev)
			}
		case m.Error != nil:
			return nil, m.Error
		case m.Return != nil:
			return m.Return, nil
		}
	}
}

// Events returns and forgets the events received so far.
func (q *Conn) Events() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	ev := q.events
	q.events = nil
	return ev
}

// Close closes the connection.
func (q *Conn) Close() error { return q.c.Close() }
