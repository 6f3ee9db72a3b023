package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link/server"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Probation is what a device may hold on a relay without an allow list
// (Config.Access.AllowAgents) until an operator admits it (POST
// /operator/agents/{did}/admit; torporctl device admit): any fresh
// did:key can link, so what it may store is small.
type Probation struct {
	// Bounds are its queue's ceiling (each member lowers the relay's).
	Bounds queuebounds.Bounds
	// KeyPackages is the most its KeyPackage pool may hold, and
	// KeyPackageSize the largest one (a device's own are a few hundred
	// bytes; the relay otherwise takes up to 64 KiB each).
	KeyPackages, KeyPackageSize int
	// StateBytes is the most its card, pulse and retirement statement may
	// take together.
	StateBytes int
	// Pool is what all devices on probation share, apart from what
	// admitted devices use, so that free identities cannot starve them.
	Pool ProbationPool
}

// ProbationPool bounds all devices on probation together. An admitted
// device is never refused because of them: Config.Limits.MaxAgents and
// MaxQueueBytes count admitted devices only, and probation links take at
// most Links of the relay's connections.
type ProbationPool struct {
	// Agents is the most devices on probation the relay keeps a state
	// for; a new one beyond it is refused (507 relay_full_probation).
	Agents int
	// QueueBytes is the most body bytes queued for them together (507
	// relay_queue_full, naming the probation pool).
	QueueBytes int64
	// Links is the most of them linked at once (503 probation_links_full,
	// which the device retries).
	Links int
}

// DefaultProbation is the probation of Config's zero value: 20 messages
// (5 and 128 KiB per sender) of at most 64 KiB, 256 KiB in all, a handshake reserve
// of 4 messages and 64 KiB; 32 KeyPackages (a device pools 20 by
// default) of at most 4 KiB; 32 KiB of card and pulse; and a pool of 256
// devices, 16 MiB queued and 16 links for all of them together.
func DefaultProbation() Probation {
	b := queuebounds.Default()
	b.MaxMessages, b.MaxPerPeer, b.MaxBytes, b.MaxMessageSize = 20, 5, 256<<10, 64<<10
	b.MaxPeerBytes = 128 << 10
	b.HandshakeMessages, b.HandshakeBytes = 4, 64<<10
	return Probation{Bounds: b, KeyPackages: 32, KeyPackageSize: 4 << 10, StateBytes: 32 << 10,
		Pool: ProbationPool{Agents: 256, QueueBytes: 16 << 20, Links: 16}}
}

// Validate refuses a probation with a non-positive member.
func (p Probation) Validate() error {
	if err := p.Bounds.Validate(); err != nil {
		return fmt.Errorf("probation: %w", err)
	}
	if p.KeyPackages < 1 || p.KeyPackageSize < 1 || p.StateBytes < 1 {
		return errors.New("probation: KeyPackages, KeyPackageSize and StateBytes must be positive")
	}
	if p.Pool.Agents < 1 || p.Pool.QueueBytes < 1 || p.Pool.Links < 1 {
		return errors.New("probation: the pool's agents, queue bytes and links must be positive")
	}
	return nil
}

// limitDefaults fills in and checks the KeyPackage budget, the probation
// and the global caps of cfg.
func (cfg *Config) limitDefaults() error {
	if cfg.Limits.KeyPackageBudget == 0 {
		cfg.Limits.KeyPackageBudget = 64
	}
	if cfg.Limits.KeyPackageBudgetWindow == 0 {
		cfg.Limits.KeyPackageBudgetWindow = time.Hour
	}
	if cfg.Limits.KeyPackageRate < 0 || cfg.Limits.KeyPackageBudget < 0 || cfg.Limits.KeyPackageBudgetWindow < 0 {
		return errors.New("relay: negative KeyPackage rate, budget or window")
	}
	if cfg.Access.Probation == (Probation{}) {
		cfg.Access.Probation = DefaultProbation()
	}
	if err := cfg.Access.Probation.Validate(); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	if cfg.Limits.MaxAgents < 0 || cfg.Limits.MaxStateBytes < 0 || cfg.Limits.MaxQueueBytes < 0 || cfg.Limits.ForgetAfter < 0 {
		return errors.New("relay: negative MaxAgents, MaxStateBytes, MaxQueueBytes or ForgetAfter")
	}
	return nil
}

// lower returns b with every member no greater than p's.
func (p Probation) lower(b queuebounds.Bounds) queuebounds.Bounds {
	pb := p.Bounds
	b.MaxMessages, b.MaxPerPeer = min(b.MaxMessages, pb.MaxMessages), min(b.MaxPerPeer, pb.MaxPerPeer)
	b.MaxBytes, b.MaxMessageSize = min(b.MaxBytes, pb.MaxBytes), min(b.MaxMessageSize, pb.MaxMessageSize)
	b.MaxPeerBytes, b.TTL = min(b.MaxPeerBytes, pb.MaxPeerBytes), min(b.TTL, pb.TTL)
	b.HandshakeMessages, b.HandshakeBytes = min(b.HandshakeMessages, pb.HandshakeMessages), min(b.HandshakeBytes, pb.HandshakeBytes)
	return b
}

// admission is the relay's memory of admitted agents: admitted ones
// are remembered (an admission is never taken back); others are asked of
// the store every time, so that an admission on another relay of a fleet
// counts at once.
type admission struct {
	mu sync.Mutex
	// mu guards known.
	known map[string]bool

	queueMu sync.Mutex
	// queueMu guards the census: agents and their queued bytes, admitted
	// and on probation, as last counted and since added to.
	census census

	linksMu sync.Mutex
	// linksMu guards probLinks: the links up of agents on probation.
	probLinks map[string]int

	// forgotten counts agents forgotten for their silence; refusals,
	// publishes and links refused by probation or a global cap, by cap.
	forgotten prometheus.Counter
	refusals  *prometheus.CounterVec
}

// newAdmissionMetrics registers the admission's metrics with reg.
func (a *admission) newAdmissionMetrics(reg *prometheus.Registry) {
	a.forgotten = prometheus.NewCounter(prometheus.CounterOpts{Name: "torpor_relay_agents_forgotten_total",
		Help: "Agents forgotten (queue, KeyPackages, state) because their device stayed silent longer than --forget-after."})
	a.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "torpor_relay_cap_refusals_total",
		Help: "Links, states and sends refused by probation or a global cap, by cap."}, []string{"cap"})
	reg.MustRegister(a.forgotten, a.refusals)
}

// admitted reports whether agent is off probation: on an allow list, with
// bounds of its own (Config.Limits.AgentBounds), on a relay that admits all
// (Config.Access.AdmitAll), or admitted by an operator. A
// store that fails counts as not admitted (probation is the safe side).
func (s *Relay) admitted(ctx context.Context, agent string) bool {
	if ok, sure := s.admittedKnown(agent); ok || sure {
		return ok
	}
	ok, err := s.cfg.Stores.States.Admitted(ctx, agent)
	if err != nil {
		s.log.Warn("reading an admission failed; the agent is treated as on probation", "agent", agent, "err", err)
		return false
	}
	if ok {
		s.adm.mu.Lock()
		s.adm.known[agent] = true
		s.adm.mu.Unlock()
	}
	return ok
}

// admittedKnown is admitted without asking the store: ok when the
// configuration or the memory of admissions says agent is admitted, sure
// when the configuration decides either way.
func (s *Relay) admittedKnown(agent string) (ok, sure bool) {
	if s.allow != nil {
		return s.allow[agent], true
	}
	if _, ok := s.cfg.Limits.AgentBounds[agent]; ok || s.cfg.Access.AdmitAll {
		return true, true
	}
	s.adm.mu.Lock()
	defer s.adm.mu.Unlock()
	return s.adm.known[agent], false
}

// capRefusal is a link refusal that names the cap: HTTP 507 with its code.
func capRefusal(code, msg string) error {
	return &server.Refusal{Status: http.StatusInsufficientStorage, Code: code, Message: msg}
}

// admitLink refuses the link of an agent on probation when the probation
// pool's links are all taken (503 probation_links_full, retried by the
// device), and the link of a new agent when its class is full: an
// admitted one when the relay holds Config.Limits.MaxAgents admitted
// agents, one on probation when it holds the pool's Agents on probation
// (507 relay_full_agents, relay_full_probation); and any new one when the
// agents store takes Config.Limits.MaxStateBytes. Devices on probation
// never count against admitted ones.
func (s *Relay) admitLink(ctx context.Context, agent string) error {
	admitted := s.admitted(ctx, agent)
	if !admitted && s.probationLinksFull(agent) {
		s.adm.refusals.WithLabelValues("probation_links").Inc()
		return &server.Refusal{Status: http.StatusServiceUnavailable, Code: "probation_links_full",
			Message: fmt.Sprintf("devices on probation hold all %d of their links (--probation-links); try again later, or have an operator admit this device", s.cfg.Access.Probation.Pool.Links)}
	}
	if _, err := s.cfg.Stores.States.Get(ctx, agent); !errors.Is(err, agents.ErrUnknownAgent) {
		return s.linkStoreFailed(agent, err)
	}
	if err := s.newAgentRoom(ctx, agent, admitted); err != nil {
		var r *server.Refusal
		if errors.As(err, &r) {
			return err
		}
		return s.linkStoreFailed(agent, err)
	}
	if s.cfg.Limits.MaxStateBytes <= 0 {
		return nil
	}
	u, err := s.cfg.Stores.States.Usage(ctx)
	if err != nil {
		return s.linkStoreFailed(agent, err)
	}
	if u.Bytes >= s.cfg.Limits.MaxStateBytes {
		s.log.Warn("refused a new agent: the agent store is full", "agent", agent, "bytes", u.Bytes, "max", s.cfg.Limits.MaxStateBytes)
		s.adm.refusals.WithLabelValues("state_bytes").Inc()
		return capRefusal("relay_full_state", fmt.Sprintf("the relay's agent store takes its most bytes (%d, --max-state-bytes); a new device cannot link", s.cfg.Limits.MaxStateBytes))
	}
	return nil
}

// newAgentRoom returns a *server.Refusal when a new agent of its class
// (admitted or on probation) would exceed that class's most agents, and
// counts it in the census otherwise.
func (s *Relay) newAgentRoom(ctx context.Context, agent string, admitted bool) error {
	max, class := s.cfg.Limits.MaxAgents, classAdmitted
	if !admitted {
		max, class = s.cfg.Access.Probation.Pool.Agents, classProbation
	}
	if max <= 0 {
		return nil
	}
	s.adm.queueMu.Lock()
	defer s.adm.queueMu.Unlock()
	if err := s.recount(ctx, false); err != nil {
		return err
	}
	if n := s.adm.census.agents[class]; n >= int64(max) {
		if admitted {
			s.log.Warn("refused a new agent: the relay holds its most agents", "agent", agent, "agents", n, "max", max)
			s.adm.refusals.WithLabelValues("agents").Inc()
			return capRefusal("relay_full_agents", fmt.Sprintf("this relay holds its most agents (%d, --max-agents); a new device cannot link", max))
		}
		s.log.Info("refused a new agent on probation: the probation pool holds its most agents", "agent", agent, "agents", n, "max", max)
		s.adm.refusals.WithLabelValues("probation_agents").Inc()
		return capRefusal("relay_full_probation", fmt.Sprintf("this relay holds its most devices on probation (%d, --probation-agents); an operator's admission, or an owner's enrolment, lets this device link", max))
	}
	s.adm.census.agents[class]++
	return nil
}

// probationLinksFull reports whether the links of agents on probation
// other than agent take the whole pool.
func (s *Relay) probationLinksFull(agent string) bool {
	s.adm.linksMu.Lock()
	defer s.adm.linksMu.Unlock()
	n := len(s.adm.probLinks)
	if s.adm.probLinks[agent] > 0 {
		n-- // a device linking again replaces its own link
	}
	return n >= s.cfg.Access.Probation.Pool.Links
}

// probationLinked counts a link of an agent on probation coming up or
// going down.
func (s *Relay) probationLinked(agent string, up bool) {
	s.adm.linksMu.Lock()
	defer s.adm.linksMu.Unlock()
	if s.adm.probLinks == nil {
		s.adm.probLinks = map[string]int{}
	}
	switch {
	case up:
		s.adm.probLinks[agent]++
	case s.adm.probLinks[agent] > 1:
		s.adm.probLinks[agent]--
	default:
		delete(s.adm.probLinks, agent)
	}
}

// linkStoreFailed turns a store failure while admitting a link (nil for
// none) into a 503 the device retries, as a sender's request is answered
// (storeFailed): the device is not refused, the relay could not decide.
func (s *Relay) linkStoreFailed(agent string, err error) error {
	if err == nil {
		return nil
	}
	s.log.Warn("link not admitted: store failed", "agent", agent, "err", err)
	return &server.Refusal{Status: http.StatusServiceUnavailable, Code: "store_unavailable",
		Message: "the relay could not read its store to admit this link; nothing changed, try again later"}
}

// checkAdmission refuses a published state a device on probation may not
// store (more KeyPackages or a larger card and pulse than Probation
// allows), and one that would grow the agents store past its caps: a new
// agent beyond Config.Limits.MaxAgents, or new KeyPackages once the store takes
// Config.Limits.MaxStateBytes.
func (s *Relay) checkAdmission(ctx context.Context, agent did.DID, known bool, st wire.State) error {
	id := agent.String()
	if !s.admitted(ctx, id) {
		p := s.cfg.Access.Probation
		if n := len(st.Card) + len(st.Pulse) + len(st.Retirement); n > p.StateBytes {
			return s.capRefused("probation", fmt.Errorf("on probation: a card and pulse of %d bytes exceed %d until an operator admits this device (torporctl device admit)", n, p.StateBytes))
		}
		for i, kp := range append(slices.Clip(st.KeyPackages), st.LastResort) {
			if len(kp) > p.KeyPackageSize {
				return s.capRefused("probation", fmt.Errorf("on probation: KeyPackage %d of %d bytes exceeds %d until an operator admits this device (torporctl device admit)", i, len(kp), p.KeyPackageSize))
			}
		}
		held := 0
		if !st.ReplaceKeyPackages && len(st.KeyPackages) > 0 {
			pool, _, err := s.cfg.Stores.States.KeyPackages(ctx, id)
			if err != nil {
				return err
			}
			held = len(pool)
		}
		if held+len(st.KeyPackages) > p.KeyPackages {
			return s.capRefused("probation", fmt.Errorf("on probation: %d held + %d published KeyPackages exceed %d until an operator admits this device (torporctl device admit)", held, len(st.KeyPackages), p.KeyPackages))
		}
	}
	grows := !known || len(st.KeyPackages) > 0 || len(st.LastResort) > 0
	if !grows || s.cfg.Limits.MaxStateBytes <= 0 {
		return nil
	}
	// A new agent's room in its class was taken when it linked
	// (admitLink).
	u, err := s.cfg.Stores.States.Usage(ctx)
	if err != nil {
		return err
	}
	if u.Bytes >= s.cfg.Limits.MaxStateBytes {
		return s.capRefused("state_bytes", fmt.Errorf("relay_full_state: the relay's agent store takes its most bytes (%d, --max-state-bytes); no new agents or KeyPackages", s.cfg.Limits.MaxStateBytes))
	}
	return nil
}

// capRefused counts a refusal by cap and returns err.
func (s *Relay) capRefused(cap string, err error) error {
	s.adm.refusals.WithLabelValues(cap).Inc()
	return err
}

// queueCapRecount is how long a census of the agents and their queued
// bytes is trusted (on the relay's clock); at a cap, a second, so that
// acknowledged records free room soon.
const queueCapRecount, queueCapRecountFull = 10 * time.Second, time.Second

// The census's classes.
const (
	classProbation = 0
	classAdmitted  = 1
)

// census counts agents and their queued body bytes by class (probation,
// admitted). Between counts each body let through and each new agent is
// added, so a burst cannot overshoot by more than what is already being
// enqueued.
type census struct {
	at            time.Time
	agents, bytes [2]int64
}

// recount counts the census again when it is older than queueCapRecount,
// or than queueCapRecountFull when full says a cap was reached. queueMu is
// held.
func (s *Relay) recount(ctx context.Context, full bool) error {
	now := s.clk.Now()
	c := &s.adm.census
	age := now.Sub(c.at)
	if !c.at.IsZero() && age >= 0 && age < queueCapRecount && !(full && age >= queueCapRecountFull) {
		return nil
	}
	ids, err := s.cfg.Stores.States.Agents(ctx)
	if err != nil {
		return err
	}
	var next census
	for _, a := range ids {
		class := classProbation
		if s.admitted(ctx, a) {
			class = classAdmitted
		}
		next.agents[class]++
		if s.cfg.Limits.MaxQueueBytes <= 0 && class == classAdmitted {
			continue // no cap to count the bytes for
		}
		st, err := s.cfg.Stores.Queue.Stats(ctx, a, now)
		if err != nil {
			return err
		}
		next.bytes[class] += st.Bytes
	}
	next.at = now
	*c = next
	return nil
}

// relayQueueFull answers 507 relay_queue_full and returns true when the
// queues of agent's class hold their most bytes together: admitted
// agents Config.Limits.MaxQueueBytes, agents on probation the probation
// pool's QueueBytes. The class comes from the relay's memory, never a
// store read on the send path: an admission made at another relay of a
// fleet is learnt at the next census (queueCapRecount), and until then
// the agent's sends count against the probation pool.
func (s *Relay) relayQueueFull(ctx context.Context, w http.ResponseWriter, req rpcRequest, agent string, size int) bool {
	if s.cfg.Limits.MaxQueueBytes <= 0 && s.cfg.Access.Probation.Pool.QueueBytes <= 0 {
		return false
	}
	s.adm.queueMu.Lock()
	defer s.adm.queueMu.Unlock()
	if err := s.recount(ctx, false); err != nil { // also learns the admissions
		s.log.Warn("counting the queued bytes failed", "err", err)
	}
	max, class, flag := s.cfg.Limits.MaxQueueBytes, classAdmitted, "--max-queue-bytes"
	if ok, _ := s.admittedKnown(agent); !ok {
		max, class, flag = s.cfg.Access.Probation.Pool.QueueBytes, classProbation, "--probation-queue-bytes, for all devices on probation"
	}
	if max <= 0 {
		return false
	}
	if s.adm.census.bytes[class]+int64(size) > max {
		if err := s.recount(ctx, true); err != nil { // acknowledgements may have freed room
			s.log.Warn("counting the queued bytes failed", "err", err)
		}
	}
	if s.adm.census.bytes[class]+int64(size) > max {
		s.metrics.enqueue(agent, "full_relay")
		cap := "queue_bytes"
		if class == classProbation {
			cap = "probation_queue_bytes"
		}
		s.adm.refusals.WithLabelValues(cap).Inc()
		answer(w, req, http.StatusInsufficientStorage, CodeQueueFull, profileAnswer{Error: "relay_queue_full",
			Message: fmt.Sprintf("the relay's queues hold their most bytes (%s, %s); nothing was queued", byteSize(max), flag), Queued: false}, 60)
		return true
	}
	s.adm.census.bytes[class] += int64(size)
	return false
}

// forgetSilent garbage-collects the agents whose device has not published
// a state for longer than Config.Limits.ForgetAfter and is not linked now: their
// queued records, their KeyPackages and their state. It returns how many
// it forgot.
func (s *Relay) forgetSilent(ctx context.Context) int {
	if s.cfg.Limits.ForgetAfter <= 0 {
		return 0
	}
	now, n := s.clk.Now(), 0
	slots := map[string]shared.Slot{}
	var silent []string
	err := agents.EachState(ctx, s.cfg.Stores.States, func(id string, st agents.State) error {
		if now.Sub(st.UpdatedAt) > s.cfg.Limits.ForgetAfter {
			silent = append(silent, id)
		} else {
			addWakeSecond(slots, id, st)
		}
		return nil
	})
	if err != nil {
		s.log.Error("listing agents to forget the silent ones", "err", err)
		return 0
	}
	defer func() {
		if err := s.seconds.s.Count(ctx, slots); err != nil {
			s.log.Error("counting the agents' wake seconds", "err", err)
		}
	}()
	for _, id := range silent {
		// Read again, from the store itself: a bulk read may lag.
		st, err := s.cfg.Stores.States.Get(ctx, id)
		if err != nil || now.Sub(st.UpdatedAt) <= s.cfg.Limits.ForgetAfter || s.linkUp(ctx, id) {
			if err == nil {
				addWakeSecond(slots, id, st)
			}
			continue
		}
		if err := s.forget(ctx, id, st.Window.Minute, now); err != nil {
			s.log.Error("forgetting a silent agent", "agent", id, "err", err)
			continue
		}
		s.log.Info("forgot a silent agent", "agent", id, "lastState", st.UpdatedAt, "forgetAfter", s.cfg.Limits.ForgetAfter)
		s.adm.forgotten.Inc()
		n++
	}
	return n
}

// forget removes agent's queued records, then its state and KeyPackages,
// and frees its wake second in minute.
func (s *Relay) forget(ctx context.Context, agent string, minute int, now time.Time) error {
	for {
		recs, err := s.cfg.Stores.Queue.Next(ctx, agent, 0, 500, now)
		if err != nil || len(recs) == 0 {
			if err != nil {
				return err
			}
			break
		}
		seqs := make([]uint64, 0, len(recs))
		for _, r := range recs {
			seqs = append(seqs, r.Seq)
		}
		if err := s.cfg.Stores.Queue.Ack(ctx, agent, seqs); err != nil {
			return err
		}
	}
	if err := s.cfg.Stores.States.Forget(ctx, agent); err != nil {
		return err
	}
	if err := s.tenantForget(agent); err != nil {
		return err
	}
	s.rolloutsForget(ctx, agent)
	return s.seconds.s.Forget(ctx, agent, minute)
}

// serveAdmit is POST /operator/agents/{did}/admit: an operator (a DID of
// Config.Access.Operators, proven by a DID Bearer token for the relay) admits an
// agent, which leaves probation, and drops its link if this relay holds
// it, so that it links again under the relay's ceiling. 401 without a
// valid token, 403 for a caller that is not an operator.
func (s *Relay) serveAdmit(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.operator(w, r)
	if !ok {
		return
	}
	agent, err := did.Parse(r.PathValue("did"))
	if err != nil {
		s.recordOperator(r, caller, "", "not an Ed25519 did:key")
		httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "bad_agent", "message": "not an Ed25519 did:key"})
		return
	}
	if !s.mayAct(w, r, caller, agent) {
		return
	}
	if err := s.cfg.Stores.States.Admit(r.Context(), agent.String()); err != nil {
		s.recordOperator(r, caller, "", "the store failed")
		s.storeFailed(w, err)
		return
	}
	s.recordOperator(r, caller, "", "")
	s.adm.mu.Lock()
	s.adm.known[agent.String()] = true
	s.adm.mu.Unlock()
	s.log.Info("agent admitted", "agent", agent.String(), "operator", caller.String())
	// Its link, if up, announced probation's ceiling and its card names
	// those bounds: it links again and publishes for the relay's.
	s.link.Drop(agent.String(), "admitted: link again for the relay's bounds")
	httpjson.Write(w, http.StatusOK, map[string]any{"did": agent.String(), "admitted": true})
}
