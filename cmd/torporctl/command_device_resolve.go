package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// destructiveOps go only to a pinned DID or one given with --did, never
// to the DID of a status seen for the first time.
var destructiveOps = map[string]bool{
	command.OpHalt: true, command.OpSetMode: true, command.OpRotateKeys: true, command.OpReboot: true,
	command.OpConfirm: true, command.OpConfigSet: true, command.OpTime: true,
}

// resolved is the device a command goes to: its DID and, when there is
// one, its retained status, verified (signature, expiry) and signed by
// that DID.
type resolved struct {
	dev    did.DID
	status *envelope.Status
	obj    *governed.Object
}

// retained returns the device's retained status, verified and not
// expired, signed by any DID, waiting up to d for the broker to deliver it.
func (s *deviceSession) retained(ctx context.Context, d time.Duration) (*envelope.Status, *governed.Object, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	st, obj, err := s.op.Status(ctx, s.device, did.DID{})
	if err != nil {
		return nil, nil, err
	}
	if st.Name != s.device {
		return nil, nil, fmt.Errorf("the status on %s's topic is that of device %q (%s), copied from another device's topic: refusing to use it", s.device, st.Name, obj.Issuer)
	}
	return &st, obj, nil
}

// resolve decides which DID the command names: --did, else the pinned
// DID, else (first contact, not for destructive operations) the DID that
// signed the retained status, which is then pinned. A status signed by
// another DID than the pin is an error naming both.
func (s *deviceSession) resolve(ctx context.Context, op string) (resolved, error) {
	st, obj, serr := s.retained(ctx, 3*time.Second)
	if errors.Is(serr, command.ErrNoStatus) && errors.Unwrap(serr) == nil {
		// Not even an invalid or expired status: no device ever connected
		// under this name (a device publishes its status at every
		// connection), so a command would wait for nobody.
		return resolved{}, fmt.Errorf("no device has published a status under the name %s on %s: check the name (and --prefix); a command to it would wait for nobody", s.device, s.f.broker)
	}
	pin, pinned := s.known.Lookup(s.device)
	var r resolved
	switch {
	case s.f.didStr != "":
		d, err := did.Parse(s.f.didStr)
		if err != nil {
			return r, fmt.Errorf("--did: %w", err)
		}
		if pinned && pin != d {
			fmt.Fprintf(s.stderr, "warning: --did %s overrides the pin of %s to %s in %s\n", d, s.device, pin, s.known.Path())
		}
		if serr == nil && obj.Issuer != d && st.State != envelope.StateAwake {
			// Awake, the device refuses it at once (wrong-device); not
			// awake, the command would wait for its wake to be refused.
			return r, fmt.Errorf("the device on %s's topic is %s (its status, %s, is signed by it), not --did %s: it would refuse the command as another device's when it wakes; not sending", s.device, obj.Issuer, st.State, d)
		}
		r.dev = d
	case pinned:
		if serr == nil && obj.Issuer != pin {
			return r, fmt.Errorf("two DIDs claim the device name %s: %s is pinned in %s, but its status is signed by %s; not sending (if the device was replaced, fix the pin or pass --did)", s.device, pin, s.known.Path(), obj.Issuer)
		}
		r.dev = pin
	case serr != nil:
		return r, fmt.Errorf("%s is not in %s and has no valid status on %s (%v): pass --did", s.device, s.known.Path(), s.f.broker, serr)
	case destructiveOps[op]:
		return r, fmt.Errorf("%s is not pinned in %s: %s goes only to a pinned DID or one given with --did. Its status is signed by %s; check that DID with the device's owner, then pass --did (or pin it with 'torporctl device status %s')", s.device, s.known.Path(), op, obj.Issuer, s.device)
	default:
		if err := s.known.Pin(s.device, obj.Issuer); err != nil {
			return r, fmt.Errorf("pinning %s: %w", s.device, err)
		}
		fmt.Fprintf(s.stderr, "pinned %s to %s in %s (first contact)\n", s.device, obj.Issuer, s.known.Path())
		r.dev = obj.Issuer
	}
	if serr == nil && obj.Issuer == r.dev {
		r.status, r.obj = st, obj
	}
	return r, nil
}

// commandOutput is what --json prints (docs/mqtt.md, "torporctl device
// --json"): lowerCamel members, times RFC 3339, durations in milliseconds.
type commandOutput struct {
	Name   string `json:"name"`   // the device's name (its topic level)
	Device string `json:"device"` // its DID
	// State is the device's state as last known: the reply's status, or
	// the retained status; "unknown" without either.
	State   string     `json:"state"`
	Op      string     `json:"op"`
	Command string     `json:"command,omitempty"` // the command's id; empty when none was sent
	Seq     uint64     `json:"seq,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
	// Waiting: no reply within --wait; the command waits for the device.
	Waiting bool `json:"waiting"`
	// RefusedBy is the DID of a device that refused the command as not
	// its own (wrong-device): --did named another device.
	RefusedBy string          `json:"refusedBy,omitempty"`
	Reply     *command.Reply  `json:"reply,omitempty"`
	Signed    json.RawMessage `json:"signedReply,omitempty"`
	// Status is the retained status, when there was no reply (or the
	// device sleeps and status answered from it); StatusIssuedAt and
	// StatusAgeMs say how old it is.
	Status         *envelope.Status `json:"status,omitempty"`
	StatusIssuedAt *time.Time       `json:"statusIssuedAt,omitempty"`
	StatusAgeMs    *int64           `json:"statusAgeMs,omitempty"`
}

func (o *commandOutput) setStatus(r resolved, now time.Time) {
	if r.status == nil {
		return
	}
	o.Status, o.State = r.status, string(r.status.State)
	at := r.obj.IssuedAt.UTC()
	age := now.Sub(at).Milliseconds()
	o.StatusIssuedAt, o.StatusAgeMs = &at, &age
}

func (s *deviceSession) command(ctx context.Context, e *env, op string, args any) error {
	r, err := s.resolve(ctx, op)
	if err != nil {
		return err
	}
	out := commandOutput{Name: s.device, Device: r.dev.String(), State: "unknown", Op: op}
	if op == command.OpStatus && r.status != nil && r.status.State != envelope.StateAwake {
		// A sleeping or stopped device: its verified retained status is
		// the answer; a command would wait for the next wake.
		out.setStatus(r, s.clk.Now())
		return s.print(e, out)
	}
	if err := s.send(ctx, e, r, &out, args); err != nil {
		return err
	}
	if out.Reply == nil && out.RefusedBy == "" {
		out.Waiting = true
		out.setStatus(r, s.clk.Now())
	}
	if err := s.print(e, out); err != nil {
		return err
	}
	switch {
	case out.RefusedBy != "":
		return exitError{1}
	case out.Reply == nil:
		return exitError{3}
	case out.Reply.Outcome != command.OutcomeOK:
		return exitError{1}
	}
	return nil
}

// send signs and publishes the command and waits for the reply.
func (s *deviceSession) send(ctx context.Context, e *env, r resolved, out *commandOutput, args any) error {
	seq, err := s.nextSeq(r.dev)
	if err != nil {
		return err
	}
	spec := command.Spec{Device: r.dev, Seq: seq, Op: out.Op, Args: args, TTL: s.f.ttl}
	sent, err := s.op.Send(ctx, s.device, spec, s.f.cbor)
	if err != nil {
		return err
	}
	if sent.NoSubscribers {
		return fmt.Errorf("the broker has no session for %s: the command was dropped (has the device ever connected to %s with this name?)", s.device, s.f.broker)
	}
	exp, _ := sent.Object.Expiry()
	exp = exp.UTC()
	out.Command, out.Seq, out.Expires = sent.Object.ID, seq, &exp
	if s.f.wait <= 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.f.wait)
	defer cancel()
	// Any device's signed reply is read, so that one refusing a command
	// for another DID (--did wrong) is reported, not taken for silence.
	rep, obj, err := s.op.AwaitReply(wctx, s.device, sent.Object.ID, did.DID{})
	switch {
	case err == nil && obj.Issuer != r.dev && rep.Reason == command.ReasonWrongDevice:
		out.RefusedBy, out.Reply = obj.Issuer.String(), &rep
	case err == nil && obj.Issuer != r.dev:
		fmt.Fprintf(e.stderr, "warning: ignored a reply signed by %s, not by %s\n", obj.Issuer, r.dev)
	case err == nil:
		out.Reply = &rep
		out.Signed, _ = obj.MarshalJSON()
		out.State = replyState(rep)
		s.followRotation(e, rep)
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, envelope.ErrNotFromDevice):
		fmt.Fprintf(e.stderr, "warning: %v\n", err)
	}
	return nil
}

// replyState is the device's state a status reply reports; a device that
// answers is awake.
func replyState(r command.Reply) string {
	var res struct {
		Status envelope.Status `json:"status"`
	}
	if json.Unmarshal(r.Result, &res) == nil && res.Status.State != "" {
		return string(res.Status.State)
	}
	return string(envelope.StateAwake)
}

func (s *deviceSession) print(e *env, out commandOutput) error {
	switch {
	case s.f.json:
		return printJSONTo(e.stdout, out)
	case s.view == "lost":
		printLost(e.stdout, out)
	default:
		printCommand(e.stdout, out)
	}
	return nil
}

// followRotation moves the device's pin to its new DID after a rotate-keys
// it answered ok: the reply is signed by the pinned (old) key and names
// the new DID, so the pin follows the device, not whoever claims it.
func (s *deviceSession) followRotation(e *env, rep command.Reply) {
	if rep.Op != command.OpRotateKeys || rep.Outcome != command.OutcomeOK {
		return
	}
	var res struct{ Old, New string }
	if json.Unmarshal(rep.Result, &res) != nil || res.Old != rep.Device {
		return
	}
	next, err := did.Parse(res.New)
	if err != nil {
		return
	}
	if err := s.known.Repin(s.device, next); err != nil {
		fmt.Fprintf(e.stderr, "warning: the device now has DID %s, but updating %s failed: %v\n", next, s.known.Path(), err)
		return
	}
	fmt.Fprintf(e.stderr, "re-pinned %s to its new DID %s in %s (rotate-keys, signed by %s)\n", s.device, next, s.known.Path(), res.Old)
}

// nameOf returns the device's name (its topic level) when DEVICE is given
// as a DID, as the console's copied commands give it: the name pinned to
// that DID in --known-devices, else the name under which a status signed
// by it is retained on the broker. The DID becomes --did. Any other
// DEVICE is the name already.
func nameOf(ctx context.Context, op *command.Operator, known *command.KnownDevices, f *deviceFlags, device string) (string, error) {
	d, err := did.Parse(device)
	if err != nil {
		return device, nil
	}
	if f.didStr != "" && f.didStr != d.String() {
		return "", fmt.Errorf("the device is given as %s but --did is %s", d, f.didStr)
	}
	f.didStr = d.String()
	for name, pin := range known.Devices() {
		if pin == d {
			return name, nil
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	name, err := op.NameOf(sctx, d)
	if err != nil {
		return "", fmt.Errorf("no device name for %s: it is not in %s and %v", d, known.Path(), err)
	}
	return name, nil
}
