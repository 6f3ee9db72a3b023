package manage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/store/replay"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// Device carries out the commands a Server admitted. Commands
// implements it on the agent.
type Device interface {
	// Execute runs c and reports the outcome. It is called for one command
	// at a time, in sequence order, except halt, which may run while
	// another command is in progress so that it reaches work in flight.
	// ctx ends when the Server stops.
	Execute(ctx context.Context, c Command) Result
}

// Result is what Device.Execute reports.
type Result struct {
	// Outcome is command.OutcomeOK or command.OutcomeFailed.
	Outcome command.Outcome
	// Reason is a short machine reason for a failure, such as
	// "unsupported" or "no-hold".
	Reason string
	// Detail is a human-readable explanation.
	Detail string
	// Data is the operation's result, marshalled with encoding/json into
	// the reply's result member.
	Data any
	// After, when set, runs once the reply is on its way and the command
	// acknowledged (reboot uses it, so that the reply is not lost).
	After func()
}

// OK returns a successful Result carrying data.
func OK(data any) Result { return Result{Outcome: command.OutcomeOK, Data: data} }

// Failed returns a failed Result.
func Failed(reason, format string, args ...any) Result {
	return Result{Outcome: command.OutcomeFailed, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Defaults of Config.
const (
	DefaultMaxCommandTTL = command.DefaultMaxTTL
	DefaultRejectionRate = 30
)

// Config configures a device's Server: its MQTT client (Config; its
// Handler is the Server) and what admission needs. Broker, Name, Key, DB,
// Replay, Ledger and Device are required.
type Config struct {
	mqtt.Config
	// Operators are the DIDs whose commands the device accepts.
	Operators []did.DID
	// Replay and Ledger are the agent's replay cache and idempotency
	// ledger, in Config.DB; the sequence table lives there too.
	Replay *replay.Cache
	Ledger *ledger.Ledger
	Device Device
	// MaxCommandTTL is the longest lifetime a command may declare, and
	// the lifetime of one that declares none; zero means
	// DefaultMaxCommandTTL.
	MaxCommandTTL time.Duration
	// RejectionsPerMinute bounds the replies to refused commands, so a
	// flood of bad commands costs bounded signing and radio time; zero
	// means DefaultRejectionRate.
	RejectionsPerMinute int
}

// Server is the device's side of the management channel: an MQTT Client
// (embedded: Sleep, Close, Abort, ...) whose commands it admits, runs on
// its Device one at a time and answers. See the package documentation.
type Server struct {
	*mqtt.Client
	cfg     Config
	log     *slog.Logger
	adm     *admitter
	limiter *limiter
	jobs    chan job

	mu sync.Mutex
	// mu guards stats.
	stats Stats
}

// Stats counts what a Server did.
type Stats struct {
	Accepted   int
	Rejected   map[string]int // by reason
	Suppressed int            // rejections not answered (rate limit)
	Connects   int
}

// job is an admitted command waiting to run.
type job struct {
	d   *mqtt.Delivery
	cmd Command
}

// Start checks cfg and starts the device's client (mqtt.Start): it
// connects in the background; use AwaitConnection to wait for it.
func Start(cfg Config) (*Server, error) {
	if cfg.Replay == nil || cfg.Ledger == nil || cfg.Device == nil || cfg.DB == nil {
		return nil, errors.New("manage: Config needs DB, Replay, Ledger and Device")
	}
	if cfg.MaxCommandTTL == 0 {
		cfg.MaxCommandTTL = DefaultMaxCommandTTL
	}
	if cfg.RejectionsPerMinute == 0 {
		cfg.RejectionsPerMinute = DefaultRejectionRate
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	recv := &governed.Receiver{Purposes: []string{command.Purpose}, MaxLifetime: cfg.MaxCommandTTL,
		KnownSigners: cfg.Operators, Clock: cfg.Clock}
	adm, err := newAdmitter(cfg.DB, cfg.Replay, cfg.Ledger, cfg.Operators, recv, cfg.MaxCommandTTL)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log.With("component", "mqtt"), adm: adm, jobs: make(chan job, 64), stats: Stats{Rejected: map[string]int{}},
		limiter: newLimiter(clock.Or(cfg.Clock), cfg.RejectionsPerMinute, time.Minute)}
	cfg.Config.Handler = s
	if s.Client, err = mqtt.Start(cfg.Config); err != nil {
		return nil, err
	}
	s.Go(s.executeLoop)
	return s, nil
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Rejected = map[string]int{}
	for k, v := range s.stats.Rejected {
		st.Rejected[k] = v
	}
	st.Connects = s.Connects()
	return st
}

// Status implements mqtt.StatusReporter when the Device does.
func (s *Server) Status() envelope.Status {
	if r, ok := s.cfg.Device.(mqtt.StatusReporter); ok {
		return r.Status()
	}
	return envelope.Status{}
}

// Order implements mqtt.Handler: the backlog in the order command.Order
// gives, so that each operator's commands are admitted in sequence.
func (*Server) Order(b []*mqtt.Delivery) []*mqtt.Delivery { return command.Order(b) }

// Handle implements mqtt.Handler: it admits the command and hands it to
// the executor, or answers its rejection.
func (s *Server) Handle(ctx context.Context, d *mqtt.Delivery) {
	if d.Err != nil {
		s.rejected(ctx, d, reject(d.Err.Reason, "%s", d.Err.Detail))
		return
	}
	cmd, err := s.adm.admit(d.Key.DID(), d.Object, func(tx *bolt.Tx, cmd Command) error {
		return d.Admit(tx, mqtt.Admission{ID: cmd.ID, Operator: cmd.Operator.String(), Seq: cmd.Seq, Op: cmd.Op, Key: cmd.Key})
	})
	var r *rejection
	switch {
	case errors.As(err, &r):
		s.rejected(ctx, d, r)
		return
	case err != nil:
		// The store failed: the command stays in the inbox and runs at
		// the next start.
		s.log.Error("admitting a command failed", "err", err)
		d.Done()
		return
	}
	s.mu.Lock()
	s.stats.Accepted++
	s.mu.Unlock()
	j := job{d: d, cmd: cmd}
	if cmd.Op == command.OpHalt {
		go s.run(ctx, j) // a halt must reach work in flight; it does not queue behind it
		return
	}
	select {
	case s.jobs <- j:
	case <-ctx.Done():
		d.Done()
	}
}

// Interrupted implements mqtt.Handler: a command admitted before a restart
// and not completed may or may not have taken effect. Its ledger key is
// indeterminate (the ledger made it so when it opened), so the answer is
// "indeterminate" with the key to reconcile; a key resolved meanwhile
// needs no answer.
func (s *Server) Interrupted(tx *bolt.Tx, d *mqtt.Delivery, a mqtt.Admission) (any, bool, error) {
	le, err := s.cfg.Ledger.Get(tx, a.Key)
	if err != nil || (le.State != ledger.Indeterminate && le.State != ledger.Reserved) {
		return nil, false, nil
	}
	r := refusedKey(&ledger.KeyError{Entry: le})
	return command.Reply{Device: d.Key.DID().String(), Command: a.ID, Operator: a.Operator, Seq: a.Seq, Op: a.Op,
		Outcome: r.outcome, Reason: r.reason, Detail: r.detail}, true, nil
}

// rejected answers a refused command on the reply topic (or, when it has no
// id to answer to, on the event topic), within the rejection rate, and
// removes it from the inbox.
//
// A copy of a command already admitted is refused too (it never runs
// twice), but its answer is the first copy's: the same signed reply again
// when that one completed, none while it still runs (its reply follows).
// Under QoS 1 a copy is legal (MQTT 5.0 Section 4.3.2), and an operator who
// waits for one answer must get the command's true outcome, not a refusal
// of the copy that may arrive first.
func (s *Server) rejected(ctx context.Context, d *mqtt.Delivery, r *rejection) {
	s.mu.Lock()
	s.stats.Rejected[r.reason]++
	s.mu.Unlock()
	s.log.Info("command refused", "outcome", r.outcome, "reason", r.reason, "detail", r.detail)
	forget := func() {
		if err := d.Forget(); err != nil {
			s.log.Error("removing a refused command from the inbox", "err", err)
		}
	}
	if r.running { // its reply follows
		forget()
		d.Done()
		return
	}
	if !s.limiter.allow() {
		s.mu.Lock()
		s.stats.Suppressed++
		s.mu.Unlock()
		forget()
		d.Done()
		return
	}
	reply := command.Reply{Device: d.Key.DID().String(), Outcome: r.outcome, Reason: r.reason, Detail: r.detail}
	if o := d.Object; o != nil {
		reply.Command = o.ID
		if verified(r.reason) {
			reply.Operator = o.Issuer.String()
			reply.Seq = command.ClaimedSeq(o)
		}
	} else if corr := d.Correlation; utf8.Valid(corr) && len(corr) <= command.MaxIDLen {
		reply.Command = string(corr)
	}
	go func() {
		defer d.Done()
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var err error
		if r.receipt != nil {
			err = d.Resend(ctx, reply.Command, r.receipt)
		} else {
			err = s.answer(ctx, d, reply)
		}
		if err != nil {
			s.log.Warn("answering a refused command failed", "err", err)
		}
		forget()
	}()
}

// answer publishes reply at once, or, when it has no command id to
// answer, an event command-rejected.
func (s *Server) answer(ctx context.Context, d *mqtt.Delivery, reply command.Reply) error {
	if reply.Command == "" {
		return d.Event(ctx, envelope.Event{Kind: "command-rejected", Detail: reply.Reason + ": " + reply.Detail})
	}
	return d.Answer(ctx, reply.Command, reply)
}

// verified reports whether a rejection came after the signature check
// passed, so that the issuer named in the object is authentic.
func verified(reason string) bool {
	switch reason {
	case governed.ReasonMalformed.String(), governed.ReasonSignatureInvalid.String(),
		governed.ReasonSignatureNotByIssuer.String(), envelope.ReasonUnsupportedContentType:
		return false
	}
	return true
}

// executeLoop runs admitted commands one at a time, in admission order.
func (s *Server) executeLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-s.jobs:
			s.run(ctx, j)
		}
	}
}

// run executes one admitted command, then commits its completion in the
// ledger, its reply in the outbound queue and its removal from the inbox
// in one transaction: after a power cut either all three are there, or the
// ledger key is still reserved (so indeterminate) and the inbox entry,
// marked admitted, makes the next start answer "indeterminate".
func (s *Server) run(ctx context.Context, j job) {
	defer j.d.Done()
	res := s.cfg.Device.Execute(ctx, j.cmd)
	reply := replyFor(j.cmd, res)
	reply.Device = j.d.Key.DID().String()
	err := s.cfg.DB.Update(func(tx *bolt.Tx) error {
		receipt, err := j.d.Complete(tx, j.cmd.ID, reply)
		if err != nil {
			return err
		}
		return s.cfg.Ledger.Complete(tx, j.cmd.Key, receipt, "")
	})
	switch {
	case errors.Is(err, mqtt.ErrAborted):
		return // as after a power cut: nothing more is recorded
	case err != nil:
		// The key stays reserved (indeterminate after a restart); the
		// operator still gets the answer if the connection is up.
		s.log.Error("recording a command's completion failed", "command", j.cmd.ID, "err", err)
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		j.d.Answer(actx, j.cmd.ID, reply)
		cancel()
	}
	s.log.Info("command executed", "op", j.cmd.Op, "id", j.cmd.ID, "operator", j.cmd.Operator.String(), "outcome", reply.Outcome, "reason", reply.Reason)
	if res.After != nil {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := s.Flush(fctx); err != nil {
			s.log.Warn("reply not acknowledged before the command's follow-up", "command", j.cmd.ID, "err", err)
		}
		cancel()
		res.After()
	}
}

// replyFor builds the reply to an executed command.
func replyFor(cmd Command, res Result) command.Reply {
	r := command.Reply{Command: cmd.ID, Operator: cmd.Operator.String(),
		Seq: cmd.Seq, Op: cmd.Op, Outcome: res.Outcome, Reason: res.Reason, Detail: res.Detail}
	if r.Outcome != command.OutcomeOK && r.Outcome != command.OutcomeFailed {
		r.Outcome, r.Reason, r.Detail = command.OutcomeFailed, "device-error", "the device reported outcome "+truncate(string(res.Outcome))
	}
	if res.Data != nil {
		b, err := json.Marshal(res.Data)
		if err != nil {
			r.Outcome, r.Reason, r.Detail = command.OutcomeFailed, "device-error", "encoding the result: "+err.Error()
		} else {
			r.Result = b
		}
	}
	return r
}
