package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link/server"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay/console"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
)

// Config configures a Relay. Stores, KeyPackages and PublicURL are
// required; the zero value of every group (Limits, Access, HTTP, Ops)
// means its documented defaults.
type Config struct {
	// PublicURL is the relay's public origin, such as
	// "https://relay.example". It is the audience of every DID Bearer
	// token the relay accepts (senders' and devices').
	PublicURL string
	// Stores are the queue and the agents store. Required.
	Stores Stores
	// KeyPackages verifies every KeyPackage a device publishes before it
	// enters the pool (session/kpcheck.Verifier; cmd/torpor-relay wires
	// it, since this package may not import mls). Required.
	KeyPackages KeyPackageVerifier
	// Peers, for a relay of a fleet, reaches device links other relays
	// hold; nil means this relay's links are all there are.
	Peers Peers
	// Limits bound what agents and callers may hold of the relay.
	Limits Limits
	// Access says who may link, store and operate.
	Access Access
	// HTTP is the browser (CORS) and reverse-proxy side.
	HTTP HTTP
	// Ops are the operators' surfaces: the fleet console, metrics and
	// /healthz.
	Ops Ops
	// Clock is the relay's time (a scaled clock in demos); nil is the real
	// clock.
	Clock clock.Clock
	// Rand is the randomness for Retry-After jitter; nil is crypto/rand
	// (read 4 KiB at a time).
	Rand io.Reader
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
}

// Stores are a Relay's stores.
type Stores struct {
	// Queue stores requests for agents that are not live.
	Queue queue.Store
	// States keeps agents' published state and KeyPackage pools.
	States agents.Store
	// StateReads, when set, answers the JSON-RPC request path's read of
	// an agent's state in place of States.Get: on JetStream a
	// jsstore.StateCache, kept current by a watch (docs/scale-out.md, "The
	// agent-state cache"). Every other read, and every write, goes to
	// States.
	StateReads StateReader
	// Audit, when set, keeps the audit log of operator actions
	// (store/audit): admissions, queue purges and console logins.
	Audit audit.Store
	// Rollouts, when set, keeps the update rollouts (store/rollouts;
	// rollouts.go); nil serves no rollout endpoint and offers no update.
	Rollouts rollouts.Store
	// Shared keeps the spent link, login and operator tokens and the
	// KeyPackage budgets and rate limits: on JetStream the fleet's one
	// memory (jsstore.Conn.Shared); nil means the relay's own, in memory
	// (shared.NewMemory).
	Shared shared.Store
	// Updates, when set, is the update repository devices fetch over
	// their link and operators publish to (updates.go).
	Updates UpdateRepo
	// Tenants, when set, makes the relay a hosted one (docs/tenants.md):
	// owners' devices join their tenants by enrolment, the tenants'
	// quotas bound their senders, and a device in a tenant is acted on
	// only by the operators its owner named. A tenants.Ledger (one bbolt
	// file) or store/jsstore's Tenants (relays sharing a cluster).
	Tenants tenants.Store
}

// StateReader reads an agent's state as agents.Store.Get does.
type StateReader interface {
	Get(ctx context.Context, agent string) (agents.State, error)
}

// Limits bound what agents and callers may hold of a Relay; zero members
// mean their documented defaults.
type Limits struct {
	// Bounds are the default and ceiling queue bounds of every agent; a
	// device may ask for tighter ones. Zero means queuebounds.Default().
	Bounds queuebounds.Bounds
	// AgentBounds overrides Bounds for particular agents (by DID).
	AgentBounds map[string]queuebounds.Bounds
	// KeyPackageRate is how many KeyPackages one caller may fetch per
	// minute; zero means 30 (the reference's rate).
	KeyPackageRate int
	// KeyPackageBudget is how many KeyPackages one agent's pool gives out
	// per KeyPackageBudgetWindow, to all callers together; beyond it the
	// last-resort KeyPackage is served. Zero means 64 per hour.
	KeyPackageBudget       int
	KeyPackageBudgetWindow time.Duration
	// LiveTimeout bounds how long a live request waits for the device's
	// answer; zero means 30 seconds.
	LiveTimeout time.Duration
	// MaxAgents caps the agents with a state: a new device beyond it is
	// refused (507 relay_full_agents). Zero: no cap.
	MaxAgents int
	// MaxStateBytes caps the agents store (agents.db's size): beyond it
	// no new agent or KeyPackage is stored. Zero: no cap.
	MaxStateBytes int64
	// MaxQueueBytes caps the bytes queued for all agents together: beyond
	// it requests are refused (507 relay_queue_full). Zero: no cap.
	MaxQueueBytes int64
	// ForgetAfter is how long an agent's device may stay silent (publish
	// no state, no link) before the relay forgets the agent: its queue,
	// KeyPackages and state. Zero: never.
	ForgetAfter time.Duration
}

// Access says who may link to a Relay, what it stores and who operates
// it.
type Access struct {
	// Operators are the DIDs whose DID Bearer tokens may list and purge a
	// device's queue (operator.go) and admit devices (admission.go):
	// torpor-relay's --operator and --operators-file, the broker's
	// operators. None: nobody may.
	Operators []did.DID
	// AllowAgents, when not empty, lists the only agents whose devices may
	// link (and so be reachable through this relay).
	AllowAgents []string
	// AdmitAll admits every device: no probation. For a relay whose
	// devices are vetted otherwise (the conformance runner, test worlds).
	AdmitAll bool
	// Owners are the DIDs whose enrolments (wire.State.Enrolment) admit a
	// device at once (enrol.go); none: only operators admit.
	Owners []did.DID
	// UsageKey, with Stores.Tenants, is the relay's key that signs the
	// tenants' hourly usage records (docs/tenants.md); none: the relay
	// serves no usage.
	UsageKey *did.PrivateKey
	// Probation is what a device not yet admitted may store (without
	// AllowAgents); zero means DefaultProbation().
	Probation Probation
	// StoreOpaque makes the relay store, and forward live, request bodies
	// that are not JSON-RPC requests, as the offline-delivery profile's
	// reference relay does for its generic agents (the conformance
	// vectors' bodies "one", "{}"). A Torpor device never takes such a
	// body, so by default the relay refuses it at once with the JSON-RPC
	// error the device would give (a2a.ParseRequest's), never letting it
	// take a queue slot until its TTL.
	StoreOpaque bool
}

// HTTP is a Relay's browser and reverse-proxy side.
type HTTP struct {
	// CORSOrigins are the browser origins (such as "https://app.example")
	// that may call the A2A JSON-RPC endpoint across origins; "*" allows
	// any. Empty allows none: browsers refuse cross-origin calls.
	CORSOrigins []string
	// CardCORSOrigins are the origins that may read cards and pulses across
	// origins. Empty means "*": they are public and signed.
	CardCORSOrigins []string
	// TrustForwardedFor makes the KeyPackage rate limit per client address
	// use the right-most X-Forwarded-For address not in TrustedProxies,
	// for a relay behind a reverse proxy. Off, it keys on the
	// connection's address.
	TrustForwardedFor bool
	// TrustedProxies are the reverse proxies whose X-Forwarded-For
	// entries are skipped (besides the connection's peer, trusted by
	// TrustForwardedFor).
	TrustedProxies []netip.Prefix
}

// Ops are a Relay's operators' surfaces.
type Ops struct {
	// Console configures the operators' fleet console (/fleet,
	// console.go); nil serves none.
	Console *ConsoleConfig
	// PerAgentMetrics adds per-agent series (labelled by DID) to /metrics.
	// Off by default: with many agents the cardinality is high.
	PerAgentMetrics bool
	// MetricsElsewhere keeps /metrics off Handler, the public listener's
	// handler: MetricsHandler serves it on a listener of its own
	// (torpor-relay --metrics-listen). Off, Handler serves it too.
	MetricsElsewhere bool
	// MQTTBroker is the broker URL devices and operators use, reported by
	// /healthz; empty when the relay does not know one.
	MQTTBroker string
	// TenantMetricsLimit, with Stores.Tenants, is how many tenants get a
	// label of their own in the tenant metrics (metrics_tenants.go: the
	// first seen); the others count under "other". Zero means 100.
	TenantMetricsLimit int
	// TenantInFlight, with Stores.Tenants, is how many of one tenant's
	// sender requests the relay works on at once; the tenant's others
	// wait, unread, for their turn (tenantgate.go). Zero means
	// DefaultTenantInFlight.
	TenantInFlight int
}

// Relay is the relay's HTTP side: the per-agent A2A endpoints, the device
// link and the operational endpoints. Create it with New and serve
// Handler(); run Run for the periodic purge of expired records.
type Relay struct {
	cfg      Config
	clk      clock.Clock
	rnd      io.Reader
	log      *slog.Logger
	verifier *bearer.Verifier
	opSpent  shared.Spent // operator tokens accepted (operator.go)
	deferred deferredSenders
	drained  drained // records acknowledged per agent, for its history (history.go)
	link     *server.Server
	metrics  *metrics
	limiter  shared.Limiter // KeyPackage fetches per caller DID
	// ipLimiter is KeyPackage fetches per client address; budget is
	// KeyPackages from each agent's pool.
	ipLimiter, budget shared.Limiter
	budgetSpent       prometheus.Counter
	adm               admission
	operators         map[string]bool
	allow             map[string]bool
	mux               *http.ServeMux
	view              *console.Source
	console           *console.Console
	seconds           wakeSeconds
	plaintext         plaintextPolicy
	// queue is cfg.Stores.Queue as the relay uses it (cfg.Stores.Queue is set to it).
	queue *watchedQueue
	// rollouts runs cfg.Stores.Rollouts; nil without it.
	rollouts *rollout.Manager
	// tenantGate bounds each tenant's requests in flight (tenantgate.go).
	tenantGate tenantGate
}

// New returns a relay for cfg. It returns an error for a missing store or
// public URL, or invalid bounds.
func New(cfg Config) (*Relay, error) {
	if cfg.Stores.Queue == nil || cfg.Stores.States == nil || cfg.KeyPackages == nil {
		return nil, errors.New("relay: Config needs Stores.Queue, Stores.States and KeyPackages")
	}
	origin, err := bearer.NormalizeAudience(cfg.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("relay: public URL: %w", err)
	}
	cfg.PublicURL = origin
	if cfg.Limits.Bounds == (queuebounds.Bounds{}) {
		cfg.Limits.Bounds = queuebounds.Default()
	}
	if err := cfg.validateBounds(); err != nil {
		return nil, err
	}
	if cfg.Limits.KeyPackageRate == 0 {
		cfg.Limits.KeyPackageRate = 30
	}
	if err := cfg.limitDefaults(); err != nil {
		return nil, err
	}
	if cfg.Limits.LiveTimeout == 0 {
		cfg.Limits.LiveTimeout = 30 * time.Second
	}
	s := &Relay{cfg: cfg, clk: clock.Or(cfg.Clock), rnd: cfg.Rand, log: cfg.Logger, adm: admission{known: map[string]bool{}}, rollouts: rolloutManager(cfg.Stores.Rollouts, cfg.Clock), tenantGate: tenantGate{limit: cmp.Or(cfg.Ops.TenantInFlight, DefaultTenantInFlight)}}
	if s.rnd == nil {
		s.rnd = newBufferedRand()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	base := s.log // each component's lines name it once
	s.log = base.With("component", "relay")
	if len(cfg.Access.AllowAgents) > 0 {
		s.allow = map[string]bool{}
		for _, a := range cfg.Access.AllowAgents {
			s.allow[a] = true
		}
	}
	s.verifier = &bearer.Verifier{Audience: origin, Clock: cfg.Clock, Signatures: bearer.NewSigCache(sigCacheSize)}
	s.operators = map[string]bool{}
	for _, d := range cfg.Access.Operators {
		s.operators[d.String()] = true
	}
	s.metrics = newMetrics(s)
	s.queue = s.watchQueue(cfg.Stores.Queue)
	s.cfg.Stores.Queue = s.queue
	s.newKeyPackageLimits()
	s.adm.newAdmissionMetrics(s.metrics.reg)
	s.link = &server.Server{
		Verifier: s.verifier, Queue: s.queue, Agents: (*linkAgents)(s), Clock: cfg.Clock,
		Logger: base.With("component", "link"), OnAcked: s.acked, OnUnacked: s.linkEnded, Updates: s.linkUpdates(),
		Spent: s.cfg.Stores.Shared.Spent("link", server.DefaultMaxSpentTokens),
	}
	if err := s.newConsole(base); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// validateBounds checks the relay's bounds and each agent's.
func (cfg *Config) validateBounds() error {
	if err := cfg.Limits.Bounds.Validate(); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	for d, b := range cfg.Limits.AgentBounds {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("relay: bounds of %s: %w", d, err)
		}
	}
	return nil
}

func (s *Relay) routes() {
	m := http.NewServeMux()
	rpc := cors{origins: cleanOrigins(s.cfg.HTTP.CORSOrigins), methods: "POST, OPTIONS"}
	public := cors{origins: cleanOrigins(s.cfg.HTTP.CardCORSOrigins), methods: "GET, HEAD, OPTIONS"}
	if len(public.origins) == 0 {
		public.origins = []string{"*"}
	}
	m.HandleFunc("POST /a/{did}/a2a/jsonrpc", rpc.wrap(s.serveJSONRPC))
	m.HandleFunc("OPTIONS /a/{did}/a2a/jsonrpc", rpc.preflight)
	m.HandleFunc("GET /a/{did}/a2a/jsonrpc", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "POST")
		httpjson.Write(w, http.StatusMethodNotAllowed, map[string]any{"error": "method_not_allowed", "message": "the A2A JSON-RPC endpoint takes POST"})
	})
	m.HandleFunc("GET /a/{did}/.well-known/agent-card.json", public.wrap(s.serveCard))
	m.HandleFunc("OPTIONS /a/{did}/.well-known/agent-card.json", public.preflight)
	m.HandleFunc("GET /a/.well-known/agent-card.json", public.wrap(serveCardWithoutAgent))
	m.HandleFunc("GET /a/{did}", public.wrap(s.serveAgentIndex))
	m.HandleFunc("GET /a/{did}/{$}", public.wrap(s.serveAgentIndex))
	m.HandleFunc("GET /.well-known/agent.json", public.wrap(s.serveRootCard))
	m.HandleFunc("GET /.well-known/agent-card.json", public.wrap(s.serveRootCard))
	m.HandleFunc("GET /a/{did}/pulse", public.wrap(s.servePulse))
	m.HandleFunc("OPTIONS /a/{did}/pulse", public.preflight)
	m.HandleFunc("GET /a/{did}/mls/key-package", s.serveKeyPackage)
	m.Handle("GET "+wire.Path, s.link)
	if !s.cfg.Ops.MetricsElsewhere {
		m.Handle("GET /metrics", s.promHandler())
	}
	m.HandleFunc("GET /healthz", s.serveHealth)
	m.HandleFunc("GET "+operatorQueuePath, s.serveQueueList)
	m.HandleFunc("DELETE "+operatorQueuePath, s.serveQueuePurge)
	m.HandleFunc("POST /operator/agents/{did}/admit", s.serveAdmit)
	s.rolloutRoutes(m)
	m.HandleFunc("PUT "+operatorUpdatesPath, s.serveUpdatePut)
	if s.cfg.Stores.Tenants != nil {
		m.HandleFunc("PUT /tenants/operators", s.serveTenantOperators)
		m.HandleFunc("GET /operator/tenants/{did}/usage", s.serveTenantUsage)
		m.HandleFunc("GET /operator/tenants", s.serveTenants)
		m.HandleFunc("PUT /operator/tenants/{did}", s.serveTenantPut)
		m.HandleFunc("PUT "+operatorTenantUpdatesPath, s.serveTenantUpdatePut)
		m.HandleFunc("DELETE "+operatorTenantBlobPath, s.serveTenantBlobDelete)
	}
	if s.console != nil {
		s.console.Register(m)
	}
	s.mux = m
}

// Handler returns the relay's HTTP handler (see the package doc for the
// URL layout).
func (s *Relay) Handler() http.Handler { return s.metrics.instrument(s.mux) }

// MetricsHandler serves GET /metrics alone, for a listener of its own
// (Config.Ops.MetricsElsewhere); anything else is 404.
func (s *Relay) MetricsHandler() http.Handler {
	m := http.NewServeMux()
	m.Handle("GET /metrics", s.promHandler())
	return m
}

func (s *Relay) promHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
}

// Registry returns the Prometheus registry behind /metrics.
func (s *Relay) Registry() *prometheus.Registry { return s.metrics.reg }

// Link returns the device link server (for tests and the conformance
// runner, which forward requests to in-process devices).
func (s *Relay) Link() *server.Server { return s.link }

// PurgeInterval is how often Run purges expired records.
const PurgeInterval = time.Minute

// sigCacheSize is how many verified caller tokens the relay remembers, so
// that a sender's repeated requests with one token cost one decoding and
// one Ed25519 verification (bearer.SigCache); about 1 KiB each, the token
// and its decoded claims.
const sigCacheSize = 4096

// Run reads the wake seconds assigned to the agents of its store
// (seconds.go), then purges expired records, forgets agents silent for
// longer than Config.Limits.ForgetAfter, records as left in their
// tenant's rollouts the devices taken out of it (rolloutsOutOfTenant) and
// re-signs the update repository's timestamp when due, every
// PurgeInterval until ctx ends, then closes every device link. It returns
// nil when ctx ended.
func (s *Relay) Run(ctx context.Context) error {
	defer s.link.Close()
	// Read the wake seconds assigned so far now rather than at the first
	// device's state (which would wait for it).
	if err := s.loadWakeSeconds(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("reading the assigned wake seconds", "err", err)
	}
	for {
		n, err := s.cfg.Stores.Queue.Purge(ctx, s.clk.Now())
		if err != nil && ctx.Err() == nil {
			s.log.Error("purge", "err", err)
		}
		if n > 0 {
			s.log.Info("purged expired records", "records", n)
			s.metrics.purged.Add(float64(n))
		}
		s.forgetSilent(ctx)
		s.rolloutsOutOfTenant(ctx)
		s.refreshUpdates()
		if err := clock.Sleep(ctx, s.clk, PurgeInterval); err != nil {
			return nil
		}
	}
}

// agentPath parses the {did} path value. It answers 404 and returns false
// when it is not an Ed25519 did:key.
func agentPath(w http.ResponseWriter, r *http.Request) (did.DID, bool) {
	id, err := agentDIDs.parse(r.PathValue("did"))
	if err != nil {
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "unknown_agent", "message": "not an Ed25519 did:key"})
		return did.DID{}, false
	}
	return id, true
}

// serveCard serves the card the device signed, verbatim, to a client that
// asks for A2A 1.0 (A2A-Version: 1.0, as @a2a-js/sdk's resolver sends), and
// its A2A 0.3 view, a2a.CardV03, to one that asks for 0.3 or names no
// version (A2A 1.0, Section 3.6.2), as a2a-go's resolver does. The view is
// derived from the signed bytes and unsigned (docs/a2a.md, "The card").
func (s *Relay) serveCard(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "A2A-Version")
	pick := func(st agents.State) []byte { return st.Card }
	if a2a.WantsCardV03(r.Header.Get("A2A-Version")) {
		pick = func(st agents.State) []byte {
			if len(st.Card) == 0 {
				return nil
			}
			v, err := a2a.CardV03(st.Card)
			if err != nil {
				// A card with no 0.3 JSON-RPC interface, or a security
				// scheme 0.3 cannot state, is served as signed.
				return st.Card
			}
			return v
		}
	}
	s.serveVerbatim(w, r, pick, "no_card", "the agent's device has not uploaded a card")
}

// serveCardWithoutAgent answers the URL that WHATWG URL resolution (RFC
// 3986, Section 5.2.3) makes of the base URL <origin>/a/{did}, without its
// trailing slash, and ".well-known/agent-card.json": the last segment, the
// DID, is replaced, so @a2a-js/sdk's createFromUrl asks here. No agent is
// named, so no card can be served; the answer says how to name one.
func serveCardWithoutAgent(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "no_agent_in_path",
		"message": "this URL names no agent: give the agent's base URL with its trailing slash, <origin>/a/<did>/, so that .well-known/agent-card.json resolves beneath it (docs/a2a.md)"})
}

// serveAgentIndex answers an agent's base URL, <origin>/a/{did} with or
// without its trailing slash, which has no resource of its own: a 404
// whose JSON body gives the URLs of the agent's card and A2A endpoint.
func (s *Relay) serveAgentIndex(w http.ResponseWriter, r *http.Request) {
	id, ok := agentPath(w, r)
	if !ok {
		return
	}
	base := s.cfg.PublicURL + "/a/" + id.String() + "/"
	httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "agent_base_url",
		"message": "this is the agent's base URL, not a resource: its Agent Card is at card, its A2A JSON-RPC endpoint (POST) at endpoint (docs/a2a.md)",
		"card":    base + ".well-known/agent-card.json", "endpoint": base + "a2a/jsonrpc"})
}

// serveRootCard answers the well-known card URLs at the relay's root
// (agent-card.json, and agent.json of A2A before 0.3): the relay serves
// many agents, each its own card beneath its base URL.
func (s *Relay) serveRootCard(w http.ResponseWriter, r *http.Request) {
	base := s.cfg.PublicURL + "/a/{did}/"
	httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "no_agent_in_path",
		"message": "this relay serves many agents, each at its own base URL <origin>/a/<did>/: the card is at card, the A2A JSON-RPC endpoint (POST) at endpoint, with the agent's DID for {did} (docs/a2a.md)",
		"card":    base + ".well-known/agent-card.json", "endpoint": base + "a2a/jsonrpc"})
}

// servePulse serves the latest liveness pulse the device published, next to
// its card. The pulse format belongs to the agent (Autonomy Envelope
// pulses); the relay serves the signed bytes as it got them.
func (s *Relay) servePulse(w http.ResponseWriter, r *http.Request) {
	s.serveVerbatim(w, r, func(st agents.State) []byte { return st.Pulse }, "no_pulse", "the agent's device has not published a pulse")
}

func (s *Relay) serveVerbatim(w http.ResponseWriter, r *http.Request, pick func(agents.State) []byte, code, msg string) {
	id, ok := agentPath(w, r)
	if !ok {
		return
	}
	st, err := s.cfg.Stores.States.Get(r.Context(), id.String())
	if errors.Is(err, agents.ErrUnknownAgent) {
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "unknown_agent", "message": "no device has published this agent"})
		return
	}
	if err != nil {
		s.storeFailed(w, err)
		return
	}
	b := pick(st)
	if len(b) == 0 {
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": code, "message": msg})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

func (s *Relay) serveHealth(w http.ResponseWriter, r *http.Request) {
	h := map[string]any{"status": "ok", "publicUrl": s.cfg.PublicURL, "mqttBroker": s.cfg.Ops.MQTTBroker, "now": s.clk.Now().UTC()}
	if sc, ok := s.clk.(interface{ Factor() float64 }); ok {
		h["timeScale"] = sc.Factor() // its clock, which tokens are checked on, runs this much faster
	}
	httpjson.Write(w, http.StatusOK, h)
}

// readOnlyFix is what the operator does when the data directory's file
// system turned read-only under the relay (ext4 does so after an I/O
// error with errors=remount-ro).
const readOnlyFix = "the data directory's file system is read-only (after an I/O error the kernel may remount it so: see dmesg); " +
	"stop the relay, check the disk (fsck), mount it read-write and start the relay again: what was acknowledged is kept"

// storeFailed answers a request the relay could not serve because its
// store failed: 503 with queued false, which a sender may retry, and
// logs the cause.
func (s *Relay) storeFailed(w http.ResponseWriter, err error) {
	s.storeFailedRPC(w, rpcRequest{}, err)
}

// storeFailedRPC is storeFailed for an A2A request: a JSON-RPC call gets
// the answer in the JSON-RPC envelope, as the relay's other 503 answers
// (answer), with code CodeServerError and data.error store_unavailable.
func (s *Relay) storeFailedRPC(w http.ResponseWriter, req rpcRequest, err error) {
	if ce := (*store.CorruptError)(nil); errors.As(err, &ce) {
		// Sticky until a restart, which the start check then refuses.
		s.log.Error("store failed", "err", err, "fix", "stop the relay, move "+ce.Path+
			" aside (keep it for diagnosis), then restore it from a backup or run torpor-relay once with --reinitialise (what it held is lost)")
	} else if re := (*store.RemovedError)(nil); errors.As(err, &re) {
		s.log.Error("store failed", "err", err, "fix", store.RemovedFix)
	} else if errors.Is(err, syscall.EROFS) {
		s.log.Error("store failed", "err", err, "fix", readOnlyFix)
	} else {
		s.log.Error("store failed", "err", err)
	}
	answer(w, req, http.StatusServiceUnavailable, CodeServerError, profileAnswer{Error: tokenStoreUnavailable,
		Message: "the relay could not read or write its store; nothing was queued or changed, try again later"}, storeRetryAfter)
}

// storeUnconfirmed answers an enqueue the store took but did not confirm
// (queue.ErrUnconfirmed): 503 with queued false, since the profile
// forbids claiming a message queued unless the enqueue succeeded, and a
// message that says it may or may not be queued, since it may be
// delivered all the same. The device's replay cache drops a second copy,
// so a sender may send the object again.
func (s *Relay) storeUnconfirmed(w http.ResponseWriter, req rpcRequest, agent string, err error) {
	s.log.Warn("enqueue not confirmed by the store", "agent", agent, "err", err)
	answer(w, req, http.StatusServiceUnavailable, CodeServerError, profileAnswer{Error: tokenStoreUnconfirmed,
		Message: "the relay's store did not confirm the write in time; the message may or may not be queued, and may be delivered; " +
			"the device drops a second copy of an object it has seen, so sending it again is safe"}, storeRetryAfter)
}

// storeRetryAfter is the Retry-After, in seconds, of a request the relay
// could not serve because its store failed: about the time a JetStream
// stream takes to elect a new leader when one server is lost.
const storeRetryAfter = 5
