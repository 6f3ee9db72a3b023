package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// MaxPulse caps the size of a published liveness pulse.
const MaxPulse = 16 << 10

// linkAgents is the Relay seen by the device link (it implements
// server.Agents).
type linkAgents Relay

// Admit lets agent link unless an allow list excludes it, and announces
// its ceiling bounds.
func (a *linkAgents) Admit(ctx context.Context, agent did.DID) (queuebounds.Bounds, error) {
	s := (*Relay)(a)
	if s.allow != nil && !s.allow[agent.String()] {
		return queuebounds.Bounds{}, errors.New("this relay does not serve agent " + agent.String())
	}
	if err := s.admitLink(ctx, agent.String()); err != nil {
		return queuebounds.Bounds{}, err
	}
	return s.ceiling(agent.String()), nil
}

// Linked counts links for /metrics.
func (a *linkAgents) Linked(agent did.DID, up bool) {
	s := (*Relay)(a)
	if s.cfg.Peers != nil {
		s.cfg.Peers.Linked(agent.String(), up)
	}
	if up {
		s.drained.linked(agent.String(), s.clk.Now())
		s.metrics.links.Inc()
	} else {
		s.metrics.links.Dec()
	}
	if !up || !s.admitted(context.Background(), agent.String()) {
		s.probationLinked(agent.String(), up)
	}
}

// Publish checks and stores a device's state. The checks keep what the
// relay serves honest: the card must be signed by the agent itself, declare
// the offline-delivery mode that matches the published mode, publish
// exactly the bounds the relay will apply, and, when it has the liveness
// extension (an older agent's), name the pulse the relay serves and the
// next wake published. The answer names the card the relay holds
// (Accepted.CardDigest), so that the device sends it only when it
// changed.
func (a *linkAgents) Publish(ctx context.Context, agent did.DID, st wire.State) (wire.Accepted, error) {
	s := (*Relay)(a)
	id := agent.String()
	prev, err := s.cfg.Stores.States.Get(ctx, id)
	if err != nil && !errors.Is(err, agents.ErrUnknownAgent) {
		return wire.Accepted{}, err
	}
	known := err == nil
	next, err := s.nextState(agent, prev, st)
	if err != nil {
		return wire.Accepted{}, err
	}
	// An enrolled device's link announced probation's ceiling, which this
	// state's card names: the state is stored as it is, and the link
	// server ends the link after its answer (Accepted.Relink), so that the
	// device links again for the relay's.
	enrolled := s.enrol(ctx, agent, st)
	if err := s.checkAdmission(ctx, agent, known, st); err != nil {
		return wire.Accepted{}, err // before the KeyPackages are parsed: it is cheaper
	}
	if err := s.checkKeyPackages(ctx, agent, st); err != nil {
		return wire.Accepted{}, err
	}
	unlock, err := s.tenantKeyPackageRoom(ctx, agent, st)
	if err != nil {
		return wire.Accepted{}, err
	}
	defer unlock()
	if err := s.assignWakeSecond(ctx, id, prev, &next); err != nil {
		return wire.Accepted{}, err
	}
	if err := s.putState(ctx, agent, next, st); err != nil {
		return wire.Accepted{}, err
	}
	s.recordWake(ctx, agent, prev, known, st)
	s.placeQueue(ctx, agent)
	held, err := s.held(ctx, id)
	if err != nil {
		return wire.Accepted{}, err
	}
	s.log.Info("state published", "agent", id, "mode", next.Mode, "keyPackages", len(st.KeyPackages), "keyPackagesHeld", len(held.Digests),
		"lastResort", len(st.LastResort) > 0)
	s.noteRetired(ctx, id, prev, next)
	ok := wire.Accepted{Bounds: next.Bounds, Held: held}
	if enrolled {
		ok.Relink = "admitted by its owner's enrolment: link again for the relay's bounds"
	}
	if next.WakeSecondSet {
		sec := next.WakeSecond
		ok.WakeSecond = &sec
	}
	ok.Offer = s.rolloutWake(ctx, id, st.Status)
	if next.Card != nil {
		ok.CardDigest = wire.CardDigest(next.Card)
	}
	return ok, nil
}

// noteRetired carries an agent's admission, tenant and place in the
// rollouts to its successor when this state is the first to name one (a
// key rotation).
func (s *Relay) noteRetired(ctx context.Context, id string, prev, next agents.State) {
	if next.Successor == "" || prev.Successor != "" {
		return
	}
	s.log.Info("agent retired", "agent", id, "successor", next.Successor)
	s.carryAdmission(ctx, id, next.Successor)
	s.carryTenant(id, next.Successor)
	s.carryRollouts(ctx, id, next.Successor)
}

func (s *Relay) nextState(agent did.DID, prev agents.State, st wire.State) (agents.State, error) {
	mode, err := wake.ParseMode(st.Mode)
	if err != nil {
		return agents.State{}, err
	}
	next := agents.State{Mode: mode, Window: wake.WindowFor(agent.String()), Card: prev.Card, Pulse: prev.Pulse, Status: prev.Status, UpdatedAt: s.clk.Now()}
	if st.Window != nil {
		next.Window = wake.Window{Minute: st.Window.Minute, Length: time.Duration(st.Window.LengthSec) * time.Second, Offset: time.Duration(st.Window.OffsetSec) * time.Second}
		if err := next.Window.Validate(); err != nil {
			return agents.State{}, err
		}
	}
	if st.NextWake != 0 {
		next.NextWake = time.Unix(st.NextWake, 0).UTC()
	}
	next.Bounds = s.ceiling(agent.String()).Clamp(st.Bounds)
	if len(st.Pulse) > MaxPulse {
		return agents.State{}, fmt.Errorf("pulse of %d bytes exceeds %d", len(st.Pulse), MaxPulse)
	}
	if st.Pulse != nil {
		next.Pulse = st.Pulse
	}
	if st.Status != nil {
		if err := checkStatus(st.Status, agent); err != nil {
			return agents.State{}, err
		}
		next.Status = st.Status
	}
	if st.Retirement != nil {
		succ, err := checkRetirement(st.Retirement, agent)
		if err != nil {
			return agents.State{}, err
		}
		next.Successor, next.Retirement = succ.String(), st.Retirement
	}
	if st.Card != nil {
		if err := a2a.VerifyCard(st.Card, agent); err != nil {
			return agents.State{}, err
		}
		if err := checkCardName(st.Card); err != nil {
			return agents.State{}, err
		}
		next.Card = st.Card
	}
	if next.Card != nil {
		if err := checkCard(next.Card, agent, next); err != nil {
			return agents.State{}, fmt.Errorf("card disagrees with the state (sign a new card): %v", err)
		}
	}
	return next, nil
}

// held names the KeyPackages the relay holds for agent by their
// wire.KeyPackageDigest (Digests never nil; LastResort nil when none):
// what the device learns in its state-ok, so that it counts those handed
// out as used and publishes new ones, and knows its last-resort
// KeyPackage arrived.
func (s *Relay) held(ctx context.Context, agent string) (*wire.Held, error) {
	pool, lastResort, err := s.cfg.Stores.States.KeyPackages(ctx, agent)
	if err != nil {
		return nil, err
	}
	out := &wire.Held{Digests: make([][]byte, 0, len(pool))}
	for _, kp := range pool {
		out.Digests = append(out.Digests, wire.KeyPackageDigest(kp))
	}
	if lastResort != nil {
		out.LastResort = wire.KeyPackageDigest(lastResort)
	}
	return out, nil
}

// checkCard requires the card to declare the offline-delivery mode of st
// (or none when st.Mode never queues) and the bounds in force, and its
// liveness extension, if any, to agree with st (checkLiveness).
func checkCard(raw []byte, agent did.DID, st agents.State) error {
	c, err := a2a.ParseCard(raw)
	if err != nil {
		return err
	}
	want := ""
	if st.Mode == wake.Sleep || st.Mode == wake.HourlyWake {
		want = string(st.Mode)
	}
	if got := c.OfflineMode(); got != want {
		return fmt.Errorf("offline-delivery mode %q, want %q", got, want)
	}
	qb, ok, err := c.QueueBounds()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no %s extension", a2a.ExtQueueBounds)
	}
	if want := st.Bounds.Published(); qb != want {
		return fmt.Errorf("queue bounds %+v, want %+v", qb, want)
	}
	if _, _, err := c.Envelope(); err != nil {
		return err
	}
	lv, ok, err := c.Liveness()
	if err != nil || !ok {
		return err
	}
	return checkLiveness(lv, agent, st)
}

// checkLiveness requires a card's liveness extension to name the pulse the
// relay serves (a valid pulse by agent, with that sequence number and chain
// hash, at a URL ending in agent's pulse path) and a next window that starts at the next
// wake published (none when none is). The window's length is the agent's
// to say: the relay's own window for the agent may leave it zero (the
// default length). A card that names an older pulse is refused like any
// other that disagrees with the state, so a device that publishes a pulse
// publishes the card naming it in the same frame.
func checkLiveness(lv a2a.Liveness, agent did.DID, st agents.State) error {
	if st.Pulse == nil {
		return fmt.Errorf("card names pulse %d, but no pulse was published", lv.Pulse.Seq)
	}
	p, err := pulse.Parse(st.Pulse)
	if err != nil {
		return fmt.Errorf("card names pulse %d, but the published pulse is invalid: %v", lv.Pulse.Seq, err)
	}
	if p.Agent != agent {
		return fmt.Errorf("card names a pulse, but the published pulse is by %s", p.Agent)
	}
	if h := pulse.Hash(st.Pulse); lv.Pulse.Seq != p.Seq || lv.Pulse.Hash != h {
		return fmt.Errorf("card names pulse %d with hash %s, but the published pulse is %d with hash %s", lv.Pulse.Seq, lv.Pulse.Hash, p.Seq, h)
	}
	// A suffix: a relay behind a reverse proxy may be published under a
	// path prefix.
	u, err := url.Parse(lv.Pulse.URL)
	if want := "/a/" + agent.String() + a2a.PulsePath; err != nil || !strings.HasSuffix(u.Path, want) {
		return fmt.Errorf("card names the pulse at %s, not at …%s", lv.Pulse.URL, want)
	}
	switch nw := lv.NextWindow; {
	case nw == nil && !st.NextWake.IsZero():
		return fmt.Errorf("card names no next window, but the next wake is %s", st.NextWake.Format(time.RFC3339))
	case nw != nil && st.NextWake.IsZero():
		return fmt.Errorf("card names a next window at %s, but no next wake was published", nw.Start.Format(time.RFC3339))
	case nw != nil && nw.Start.Unix() != st.NextWake.Unix():
		return fmt.Errorf("card names a next window at %s, but the next wake is %s", nw.Start.Format(time.RFC3339), st.NextWake.Format(time.RFC3339))
	}
	return nil
}

// putState stores next and the KeyPackages of st: added to the pool, or
// replacing it when st.ReplaceKeyPackages says so (the pool is emptied
// first; a crash in between leaves it empty until the device publishes
// again, and the last-resort KeyPackage serves meanwhile). When the pool
// is full, the pooled KeyPackages that fail the check of publication
// (pooled unchecked by an earlier relay version, or expired since) are
// dropped and the state stored again, so that junk cannot keep a device
// from publishing.
func (s *Relay) putState(ctx context.Context, agent did.DID, next agents.State, st wire.State) error {
	id := agent.String()
	if st.ReplaceKeyPackages {
		if _, err := s.cfg.Stores.States.DropKeyPackages(ctx, id, func([]byte) bool { return true }); err != nil {
			return err
		}
	}
	err := s.cfg.Stores.States.Put(ctx, id, next, st.KeyPackages, st.LastResort)
	if !errors.Is(err, agents.ErrPoolFull) {
		return err
	}
	now := s.clk.Now()
	n, derr := s.cfg.Stores.States.DropKeyPackages(ctx, id, func(kp []byte) bool { return s.checkKeyPackage(agent, kp, now) != nil })
	if derr != nil || n == 0 {
		return errors.Join(err, derr)
	}
	s.log.Warn("dropped pooled KeyPackages that fail their check", "agent", id, "dropped", n)
	return s.cfg.Stores.States.Put(ctx, id, next, st.KeyPackages, st.LastResort)
}

// KeyPackageVerifier checks a KeyPackage a device published, MLSMessage-
// wrapped, as one of agent's at now: RFC 9420, Section 10.1, and the
// credential binding of draft-chapman-a2a-mls-03 Section 4.3 to agent.
// session/kpcheck.Verifier implements it; it lives there because this
// package may not import mls or session (internal/deptest).
type KeyPackageVerifier interface {
	VerifyKeyPackage(agent did.DID, kp []byte, now time.Time) error
}

// checkKeyPackages refuses a state whose KeyPackages the pool must not
// take: one that is not a valid KeyPackage bound to agent
// (KeyPackageVerifier), one published twice in the frame or already
// pooled (by wire.KeyPackageDigest; unless the frame replaces the pool),
// or more than the pool holds. The last-resort KeyPackage is verified
// like the others. One bad KeyPackage refuses the whole state, so the
// device learns of it and nothing changes.
func (s *Relay) checkKeyPackages(ctx context.Context, agent did.DID, st wire.State) error {
	if len(st.KeyPackages) > agents.MaxKeyPackages {
		return fmt.Errorf("%d key packages, the pool holds at most %d", len(st.KeyPackages), agents.MaxKeyPackages)
	}
	now := s.clk.Now()
	seen := map[string]bool{}
	if !st.ReplaceKeyPackages && len(st.KeyPackages) > 0 {
		pool, _, err := s.cfg.Stores.States.KeyPackages(ctx, agent.String())
		if err != nil {
			return err
		}
		for _, kp := range pool {
			seen[string(wire.KeyPackageDigest(kp))] = true
		}
	}
	for i, kp := range st.KeyPackages {
		if err := s.checkKeyPackage(agent, kp, now); err != nil {
			return fmt.Errorf("key package %d: %v", i, err)
		}
		d := string(wire.KeyPackageDigest(kp))
		if seen[d] {
			return fmt.Errorf("key package %d: a duplicate of one the pool holds or this state carries", i)
		}
		seen[d] = true
	}
	if len(st.LastResort) > 0 {
		if err := s.checkKeyPackage(agent, st.LastResort, now); err != nil {
			return fmt.Errorf("last-resort key package: %v", err)
		}
	}
	return nil
}

// checkKeyPackage checks the framing of kp (checkKeyPackageHeader) and
// then the KeyPackage itself (Config.KeyPackages).
func (s *Relay) checkKeyPackage(agent did.DID, kp []byte, now time.Time) error {
	if err := checkKeyPackageHeader(kp); err != nil {
		return err
	}
	return s.cfg.KeyPackages.VerifyKeyPackage(agent, kp, now)
}

// checkKeyPackageHeader checks that kp is an MLSMessage carrying a
// KeyPackage: version mls10 (1) and wire_format mls_key_package (5) (RFC
// 9420, Section 6), and at most 64 KiB, before it is parsed.
func checkKeyPackageHeader(kp []byte) error {
	if len(kp) < 8 {
		return errors.New("too short")
	}
	if v, wf := binary.BigEndian.Uint16(kp), binary.BigEndian.Uint16(kp[2:]); v != 1 || wf != 5 {
		return fmt.Errorf("not an MLSMessage-wrapped KeyPackage (version %d, wire_format %d)", v, wf)
	}
	if len(kp) > 64<<10 {
		return errors.New("larger than 64 KiB")
	}
	return nil
}

// ceiling returns the most the relay allows agent: its own bounds
// (Config.Limits.AgentBounds), else the relay's, lowered by Config.Access.Probation
// until the agent is admitted.
func (s *Relay) ceiling(agent string) queuebounds.Bounds {
	if b, ok := s.cfg.Limits.AgentBounds[agent]; ok {
		return b
	}
	if !s.admitted(context.Background(), agent) {
		return s.cfg.Access.Probation.lower(s.cfg.Limits.Bounds)
	}
	return s.cfg.Limits.Bounds
}

// bounds returns the bounds in force for an agent with state st: those it
// published, clamped to a ceiling the operator may have lowered since. A
// state stored before the per-peer byte bound existed has none, and gets
// the ceiling's.
func (s *Relay) bounds(agent string, st agents.State) queuebounds.Bounds {
	ceil := s.ceiling(agent)
	if st.Bounds.MaxPeerBytes == 0 {
		st.Bounds.MaxPeerBytes = ceil.MaxPeerBytes
	}
	if st.Bounds.Validate() != nil {
		return ceil
	}
	return ceil.Clamp(&st.Bounds)
}
