package tsmls

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// DefaultCallTimeout bounds a call whose context has no deadline. A ts-mls
// commit in a five-member group takes tens of milliseconds; a minute leaves
// room for a loaded two-core CI machine and still ends a hung test.
const DefaultCallTimeout = time.Minute

// Config configures Start. The zero value finds everything itself.
type Config struct {
	// Node is the node executable; "" looks it up on PATH.
	Node string
	// Dir is the folder holding peer.mjs and its node_modules; "" uses
	// Locate.
	Dir string
	// CallTimeout bounds every call whose context has no deadline;
	// 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// Exporter, when set, is added to every request that returns a Summary,
	// so that each Summary carries the same exporter value to compare.
	Exporter *Exporter
	// Stderr receives the peer's standard error as well as the tail the
	// Peer keeps for its error messages; nil keeps only the tail.
	Stderr io.Writer
}

// Peer is a running ts-mls peer process. Its methods are safe for
// concurrent use; the process handles requests one at a time, in order.
type Peer struct {
	cfg    Config
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	done   chan struct{} // closed when the process has exited and the reader ended

	wmu sync.Mutex // wmu serialises writes to stdin

	mu      sync.Mutex // mu guards all following fields
	nextID  uint64
	pending map[uint64]chan response
	err     error // sticky: why the peer stopped answering
}

type response struct {
	ID     *uint64         `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`

	closed error // set instead of the above when the peer stopped
}

// Error is an error the peer returned for one request: Name is the
// JavaScript error class (BadRequest for a malformed request, or the
// ts-mls class such as ValidationError or CryptoVerificationError).
type Error struct {
	Op      string `json:"-"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("tsmls: %s: %s: %s", e.Op, e.Name, e.Message)
}

// ErrClosed is returned by calls on a Peer whose process has exited, been
// closed or stopped answering; the error wraps it with the reason and the
// tail of the peer's stderr.
var ErrClosed = errors.New("tsmls: peer closed")

// Start starts a peer. cfg may be nil. The process is tied to the Peer, not
// to ctx: ctx only bounds the start-up check (a "hello" round trip).
func Start(ctx context.Context, cfg *Config) (*Peer, error) {
	p := &Peer{pending: map[uint64]chan response{}, stderr: &tailBuffer{max: 16 << 10}, done: make(chan struct{})}
	if cfg != nil {
		p.cfg = *cfg
	}
	if p.cfg.CallTimeout <= 0 {
		p.cfg.CallTimeout = DefaultCallTimeout
	}
	if p.cfg.Node == "" || p.cfg.Dir == "" {
		node, dir, err := Locate()
		if err != nil {
			return nil, err
		}
		if p.cfg.Node == "" {
			p.cfg.Node = node
		}
		if p.cfg.Dir == "" {
			p.cfg.Dir = dir
		}
	}
	if err := p.start(); err != nil {
		return nil, err
	}
	if _, err := p.Hello(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Peer) start() error {
	p.cmd = exec.Command(p.cfg.Node, "peer.mjs")
	p.cmd.Dir = p.cfg.Dir
	var stderr io.Writer = p.stderr
	if p.cfg.Stderr != nil {
		stderr = io.MultiWriter(p.stderr, p.cfg.Stderr)
	}
	p.cmd.Stderr = stderr
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("tsmls: %w", err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("tsmls: %w", err)
	}
	p.stdin = stdin
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("tsmls: starting %s: %w", p.cfg.Node, err)
	}
	go p.read(stdout)
	return nil
}

// read delivers responses until stdout ends, then fails every pending call.
func (p *Peer) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var r response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.ID == nil {
			// Not a response to any call (a stray print, or an answer to
			// an unreadable request): keep it for the error messages.
			fmt.Fprintf(p.stderr, "tsmls: unexpected stdout line: %.500s\n", sc.Bytes())
			continue
		}
		p.mu.Lock()
		ch := p.pending[*r.ID]
		delete(p.pending, *r.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- r // buffered: never blocks
		}
	}
	waitErr := p.cmd.Wait()
	reason := "process exited"
	if waitErr != nil {
		reason = "process exited: " + waitErr.Error()
	}
	if err := sc.Err(); err != nil {
		reason = "reading stdout: " + err.Error()
	}
	p.fail(fmt.Errorf("%w: %s%s", ErrClosed, reason, p.stderrTail()))
	close(p.done)
}

// fail records the first reason the peer stopped and fails pending calls.
func (p *Peer) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
	for id, ch := range p.pending {
		ch <- response{closed: p.err}
		delete(p.pending, id)
	}
}

func (p *Peer) stderrTail() string {
	if s := p.stderr.String(); s != "" {
		return "; peer stderr:\n" + s
	}
	return ""
}

// Close ends the peer: it closes stdin, which makes the program exit after
// the request in progress, and kills it if it has not exited within five
// seconds. Calls after Close return ErrClosed.
func (p *Peer) Close() error {
	p.wmu.Lock()
	p.stdin.Close()
	p.wmu.Unlock()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.cmd.Process.Kill()
		<-p.done
	}
	p.fail(fmt.Errorf("%w: closed", ErrClosed))
	return nil
}

// Pid is the process id of the Node process.
func (p *Peer) Pid() int { return p.cmd.Process.Pid }

// Stderr returns the tail of what the peer wrote to its standard error.
func (p *Peer) Stderr() string { return p.stderr.String() }

// call sends one request and decodes its result into out (which may be
// nil). args is a struct or map marshalled as the request's other members.
func (p *Peer) call(ctx context.Context, op string, args, out any) error {
	line, id, ch, err := p.request(op, args)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.CallTimeout)
		defer cancel()
	}
	p.wmu.Lock()
	_, err = p.stdin.Write(line)
	p.wmu.Unlock()
	if err != nil {
		p.forget(id)
		return fmt.Errorf("%w: writing %s request: %v%s", ErrClosed, op, err, p.stderrTail())
	}
	select {
	case r := <-ch:
		return decodeResponse(op, r, out)
	case <-ctx.Done():
		p.forget(id)
		return fmt.Errorf("tsmls: %s: %w (the peer may still apply it)", op, ctx.Err())
	}
}

// request builds the JSON line {"id":N,"op":op,...args} and registers it.
func (p *Peer) request(op string, args any) ([]byte, uint64, chan response, error) {
	body := []byte("{}")
	if args != nil {
		var err error
		if body, err = json.Marshal(args); err != nil {
			return nil, 0, nil, fmt.Errorf("tsmls: %s: encoding request: %w", op, err)
		}
		if len(body) < 2 || body[0] != '{' {
			return nil, 0, nil, fmt.Errorf("tsmls: %s: request arguments are not a JSON object", op)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, 0, nil, p.err
	}
	p.nextID++
	id := p.nextID
	ch := make(chan response, 1)
	p.pending[id] = ch
	head, _ := json.Marshal(struct {
		ID uint64 `json:"id"`
		Op string `json:"op"`
	}{id, op})
	var line bytes.Buffer
	line.Write(head[:len(head)-1])
	if len(body) > 2 {
		line.WriteByte(',')
		line.Write(body[1:])
	} else {
		line.WriteByte('}')
	}
	line.WriteByte('\n')
	return line.Bytes(), id, ch, nil
}

func (p *Peer) forget(id uint64) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

func decodeResponse(op string, r response, out any) error {
	if r.closed != nil {
		return fmt.Errorf("tsmls: %s: %w", op, r.closed)
	}
	if !r.OK {
		e := &Error{Op: op, Name: "Error", Message: "no error in a failed response"}
		if r.Error != nil {
			e.Name, e.Message = r.Error.Name, r.Error.Message
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("tsmls: %s: decoding result: %w", op, err)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
