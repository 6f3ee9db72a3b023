// Package relay is torpor-relay's HTTP side: every sleeping device's public
// A2A endpoint. It implements the A2A offline store-and-forward profile
// (seeds/000: reachability modes, the asleep signal, bounds, queue-full)
// on top of store/queue (the durable bounded queue), store/agents (what
// each device published, and its KeyPackages), wake (windows and
// Retry-After) and transport/link/server (the relay's side of the device
// link), and hosts the devices' signed Agent Cards and KeyPackages. The
// relay never decrypts.
//
// # URL layout
//
// Each agent lives under /a/{did}, its did:key identifier, so one relay
// serves many agents at one origin (the DID Bearer audience of all of
// them):
//
//	POST /a/{did}/a2a/jsonrpc                  A2A JSON-RPC: v1.0 SendMessage with
//	                                           "A2A-Version: 1.0", v0.3 message/send
//	                                           without the header (draft §7.8)
//	GET  /a/{did}/.well-known/agent-card.json  the card the device signed, verbatim,
//	                                           with "A2A-Version: 1.0"; its A2A 0.3
//	                                           view (a2a.CardV03) without the header
//	GET  /a/{did}/pulse                        the device's latest signed liveness pulse
//	GET  /a/{did}/mls/key-package              {did, wire}: one KeyPackage, handed out once
//	GET  /link                                 the device link (WebSocket, see transport/link/wire)
//	GET  /metrics                              Prometheus (Relay.MetricsHandler instead,
//	                                           with Config.Ops.MetricsElsewhere)
//	GET  /healthz                              {"status":"ok", ...}
//	GET, DELETE /operator/queue/{did}          an operator lists or purges a device's
//	                                           queue (operator.go)
//	GET  /fleet, /fleet/api/devices            the operators' fleet console (package console)
//	POST /operator/agents/{did}/admit          an operator admits a device: it leaves
//	                                           probation (admission.go)
//
// The /operator/ endpoints take a single-use operator token bound to the
// request's method and path (bearer.OperatorPurpose), and no Origin header.
//
// The agent's A2A base URL, as its card names it, is <origin>/a/{did}, so
// a client that appends /.well-known/agent-card.json or /a2a/jsonrpc to
// the base finds both.
// The base URL itself (with or without its slash) and the well-known card
// URLs at the root (/.well-known/agent-card.json, agent.json) are no
// resource: they answer 404 with a JSON body whose card and endpoint
// members give the URLs to use.
//
// # Authentication
//
// Every JSON-RPC request needs a DID Bearer token (transport/bearer) whose
// audience is the relay's public origin; the token's DID is the sender for
// the per-peer bound, never a body field. A request without a valid token
// is never queued: it gets 401 with the reference's WWW-Authenticate header
// and body, {"error":"asleep_enqueue_requires_auth",...} (vector od-015),
// whose message and tokenError member also say why the token was refused.
// The token is checked before the agent is looked up and the answer is
// the same for every agent, known or not, so that it enumerates nothing. These
// endpoints accept only tokens without a purpose claim (the reference's
// format): a device link token (bearer.IssueLink) is refused here with
// "transport token: wrong purpose". The device link authenticates with a
// link token of the device's own DID, once, and a signature by the device
// key over a challenge (transport/link/server).
//
// # Reachability
//
// Each agent has the mode and window its device last published over the
// link (stored durably, so they survive a relay restart) and a link that is
// up or down:
//
//	mode         link up and inside the window   otherwise
//	always_on    live                            queue (the device is offline), no Retry-After
//	session      live                            refuse, never queue (SessionOnly)
//	hourly_wake  live                            queue, Retry-After into the next window
//	sleep        queue, and tell the device      queue; Retry-After only when an operator
//	                                             scheduled a wake (the device publishes it)
//
// The table is wake.Evaluate, the only one: the offline-delivery
// reachability vectors run through this package's handler and stores. A
// Retry-After is whole seconds to a moment drawn (Config.Rand) across the
// next window the device published, never 0 and never past the window's
// end; an operator's wake opens a window as long as the published one.
// The second of its wake minute an hourly_wake device's window opens at
// is the relay's to assign, at the device's first state (seconds.go):
// the least-loaded second of that minute among the agents it knows.
//
// Live requests are forwarded over the link and the device's answer is
// returned as it is. If the link vanished before the request was written,
// the request falls back to the offline path; if it vanished after, the
// answer is 504 agent_unanswered (the device may have processed it, so it
// is not queued a second time). While an agent is not live, only message
// submissions (SendMessage, SendStreamingMessage; message/send,
// message/stream) are stored — other methods, such as reading a task, get
// the asleep answer with queued false. A body the agent would not read as
// a JSON-RPC request (a2a.ParseRequest: not JSON, a member name twice,
// nesting deeper than a2a.MaxDepth, an id out of range) is refused, awake
// or asleep, with ParseRequest's error and id null, as the agent answers
// it; it would hold a queue slot the agent never frees (Config.Access.StoreOpaque
// stores it, as the reference's generic relay does). The request is read
// once (parseRequest, a2a.ReadBody). A submission none of whose
// parts the agent takes (a2a.Refusal: plain text, say) is not stored: it
// gets the agent's own answer, a2a.ObjectRejected, as if it were awake.
//
// Browsers may read cards and pulses from any origin (Config.
// CardCORSOrigins narrows that) and call the JSON-RPC endpoint from
// Config.HTTP.CORSOrigins; OPTIONS answers their preflights.
//
// # The asleep answer
//
// 503, Retry-After when the next window is known, and, sent only after the
// enqueue committed (fsync): the profile's body
//
//	{"error":"agent_asleep","message":"asleep, try later","queued":true,"retryAfterSec":840}
//
// and the profile's JSON-RPC mapping {code: -32003, message, data: {error,
// queued, retryAfterSec}} with the request's id. Both cannot share one
// object — each wants the member "error", a string in one and an object in
// the other — so the relay answers a JSON-RPC call (a request with an id) in
// the JSON-RPC form, with the profile's other members beside it:
//
//	{"jsonrpc":"2.0","id":7,
//	 "error":{"code":-32003,"message":"asleep, try later",
//	          "data":{"error":"agent_asleep","queued":true,"retryAfterSec":840}},
//	 "message":"asleep, try later","queued":true,"retryAfterSec":840}
//
// and anything else (a notification, a body that is not JSON-RPC) in the
// profile's form. Generic JSON-RPC clients, which read only "error" as an
// object, thus see the code and data; profile-aware clients read the
// status, queued and retryAfterSec at the top level in both forms, and the
// token at "error" or "error.data.error". A2A itself uses -32003 for
// PushNotificationNotSupportedError, which is what @a2a-js/sdk names the
// error it raises (test/relay asserts what it reports).
//
// A refusal that queued nothing (a session agent without a link, a
// non-submission method) is the same answer with queued false. A full queue
// answers 507 (messages, bytes) or 429 (peer) with
// {"error":"asleep_queue_full","message",...,"kind","queued":false} — never
// agent_asleep — and JSON-RPC code -32000 for a call. A body over the
// maximum message size is refused with 413 while it is read, before it is
// buffered whole.
//
// # Bounds
//
// Config.Limits.Bounds (the profile's reference bounds by default: 500 messages,
// 2 MiB, 50 per peer, 7 days, plus 512 KiB per peer so that one sender
// cannot fill the queue, 256 KiB per message and a reserve of 16 records /
// 256 KiB for MLS handshakes) are every agent's ceiling;
// Config.Limits.AgentBounds raises or lowers it per agent, and a device may ask for
// tighter bounds in its state (a state stored before the per-peer byte
// bound existed gets the ceiling's). The relay answers with the bounds in force,
// and refuses a card that does not publish exactly those (Torpor's
// queue-bounds extension, see transport/a2a), so the card never misstates
// them. Requests whose parts carry an MLS Welcome or a Commit (an
// mls-handshake part, or an mls-wire part whose MLSMessage is a Welcome or
// a PublicMessage Commit) are queued as handshakes and may use the reserve,
// unless their sender has records the device left unacknowledged on its
// last link (deferred: an MLS message for a group it never joined, which
// needs no key to make): such a sender's handshakes are queued as ordinary
// messages, so its junk costs its own allowance and never the reserve
// (deferred.go).
//
// # Cards, KeyPackages, pulses
//
// The device signs its card (a2a.SignCard) and uploads it over the link;
// the relay checks that kid is the agent's DID and that the signature
// verifies, and serves those bytes verbatim to an A2A 1.0 client and
// their unsigned 0.3 view, a2a.CardV03, to a client that names no version
// or 0.x (A2A 1.0, Section 3.6.2; serveCard). It holds no agent key and
// cannot forge a card. KeyPackages (public halves) are verified when
// published (Config.KeyPackages: RFC 9420 Section 10.1 and the credential
// binding to the device's DID; duplicates refused, at most
// agents.MaxKeyPackages pooled, a state may replace the pool), kept in the
// agents store (store/agents.Store) and removed in the same atomic step
// that hands one out, so each is used once, also across restarts and
// relays sharing the store (the reference kept one in memory). The
// verifier is an interface because this package may not import mls
// (internal/deptest); cmd/torpor-relay wires session/kpcheck. The pulse
// is stored and served as the device signed it. Each state-ok names the
// card the relay holds (wire.Accepted.CardDigest), so a device sends its
// card only when it changed; a card of an older agent that carries the
// liveness extension must name the pulse held (checkLiveness).
//
// A KeyPackage fetch needs a DID Bearer token of any DID; fetches are
// rate-limited per token DID and per client address (ratelimit.go: the
// right-most X-Forwarded-For entry that is not a trusted proxy, behind
// one), in buckets evicted least recently used first, never all at once,
// and each agent's pool gives out at most Config.Limits.KeyPackageBudget per
// window, beyond which the last-resort KeyPackage is served (RFC 9420,
// Section 16.8).
//
// # Admission and caps
//
// Without AllowAgents any fresh did:key may link, so a device starts on
// probation (admission.go, Config.Access.Probation): a small queue ceiling, few
// and small KeyPackages and a small card and pulse, until an operator
// admits it (the admission is kept in the agents store, for every relay
// sharing it). Global caps on the agents, the agents store's bytes and
// all queued bytes refuse with 507 and an error naming the cap, and Run
// forgets agents whose device stayed silent longer than
// Config.Limits.ForgetAfter, on the relay's clock.
//
// # Serving
//
// ServerLimits.Server wraps Handler in an http.Server and its listener
// with per-client bounds (serverlimits.go): header, body and answer
// deadlines per request (a body must keep up a minimum rate; the device
// link is exempt), idle keep-alives, and a cap on open connections that
// closes the oldest one without a request before it refuses a new one.
package relay
