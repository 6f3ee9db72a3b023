package relay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link/server"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// reachability is the verdict for a request to an agent whose device last
// published st and whose link is up or not: wake.Evaluate, the one
// reachability table, which the offline-delivery vectors also run through
// this handler.
func (s *Relay) reachability(st agents.State, up bool, now time.Time) wake.Verdict {
	return wake.Evaluate(schedule(st), up, now, s.rnd)
}

func schedule(st agents.State) wake.Schedule {
	return wake.Schedule{Mode: st.Mode, Window: st.Window, NextWake: st.NextWake}
}

// a2aVersion maps the A2A-Version header to "1.0" or "0.3" (draft Section
// 7.8: no header means 0.3). ok is false for a version the relay does not
// speak.
func a2aVersion(h string) (v string, ok bool) {
	switch strings.TrimSpace(h) {
	case "":
		return "0.3", true
	case "1.0", "1":
		return "1.0", true
	case "0.3", "0.3.0":
		return "0.3", true
	}
	return "", false
}

// sendMethods are the message submission methods of each A2A version.
var sendMethods = map[string][]string{
	"1.0": {"SendMessage", "SendStreamingMessage"},
	"0.3": {"message/send", "message/stream"},
}

func isSend(version, method string) bool {
	for _, m := range sendMethods[version] {
		if m == method {
			return true
		}
	}
	return false
}

// serveJSONRPC is POST /a/{did}/a2a/jsonrpc.
func (s *Relay) serveJSONRPC(w http.ResponseWriter, r *http.Request) {
	agent, ok := agentPath(w, r)
	if !ok {
		return
	}
	id := agent.String()
	// Authenticate before looking the agent up: a caller without a token
	// gets the same answer for every agent, known, retired or unknown, so
	// that nobody enumerates the relay's devices.
	caller, err := s.verifier.Verify(r.Header.Get("Authorization"))
	if err != nil {
		// Never queued. The reference's asleep middleware answers this
		// body when a request would be stored without a verified caller
		// (vector od-015); it is the answer for every agent.
		s.metrics.enqueue(id, "unauthenticated")
		answerRequiresAuth(w, authDetail(err))
		return
	}
	st, ok := s.requestState(w, r, id)
	if !ok {
		return
	}
	now := s.clk.Now()
	// Decide only; the Retry-After is drawn for the requests answered
	// asleep, not for every request.
	la := s.askLink(r.Context(), id)
	up := la.up
	rc := schedule(st).Decide(up, now)
	version, ok := a2aVersion(r.Header.Get("A2A-Version"))
	if !ok {
		answer(w, rpcRequest{}, http.StatusBadRequest, -32009, profileAnswer{Error: "version_not_supported", Message: "A2A-Version must be 1.0, or absent for 0.3"}, 0)
		return
	}
	leave, ok := s.tenantAdmit(w, r, agent)
	if !ok {
		return
	}
	defer leave()
	b := s.bounds(id, st)
	body, req, ok := s.readRequest(w, r, id, st, b)
	if !ok || !s.tenantRate(w, req, agent) {
		return
	}
	if rc.Accept {
		// The device's answer may take long: the tenant's place is for
		// the relay's own work only.
		leave()
		if s.forward(w, r, agent, caller, version, body, req) {
			return
		}
		// The link went down before the request reached the device:
		// it is stored, in the tenant's turn again.
		up = false
		if leave, ok = s.tenantAdmit(w, r, agent); !ok {
			return
		}
		defer leave()
	}
	s.offline(w, r, agent, caller, version, body, req, s.reachability(st, up, now), b, now, la)
}

// readRequest reads and classifies the request body, once. It answers,
// and returns false, when the request ends here: too large, unreadable,
// or not a request the agent reads.
func (s *Relay) readRequest(w http.ResponseWriter, r *http.Request, id string, st agents.State, b queuebounds.Bounds) ([]byte, rpcRequest, bool) {
	body, err := readBody(w, r, b.MaxMessageSize)
	if errors.Is(err, errTooLarge) {
		s.metrics.enqueue(id, "too_large")
		answerTooLarge(w, b.MaxMessageSize)
		return nil, rpcRequest{}, false
	}
	if err != nil {
		httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "bad_request", "message": "reading the request body failed", "queued": false})
		return nil, rpcRequest{}, false
	}
	req := parseRequest(body)
	if req.invalid != nil && !s.cfg.Access.StoreOpaque {
		// The agent would never take it, asleep or awake: answer what it
		// answers (runtime/live.go), with id null (JSON-RPC 2.0 Section 5).
		s.metrics.enqueue(id, "invalid")
		httpjson.Write(w, http.StatusOK, a2a.NewError(nil, req.invalid))
		return nil, rpcRequest{}, false
	}
	if req.plaintext && req.refusal == nil && s.plaintext.refuses(id, st.Card) {
		// The agent's signed card says it takes no unencrypted object
		// (a2a.ExtPolicy): it would drop this one when it drains it.
		req.refusal = a2a.ObjectRejected()
	}
	return body, req, true
}

func authDetail(err error) string {
	var e *bearer.Error
	if errors.As(err, &e) {
		return e.Detail
	}
	return "invalid token"
}

var errTooLarge = errors.New("relay: request body too large")

// readBody reads at most max bytes of the body and returns errTooLarge for
// a longer one as soon as the reading passes max, before buffering it all;
// a declared Content-Length over max is refused without reading at all.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength > max {
		return nil, errTooLarge
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, max), r.ContentLength)
	if err != nil && isMaxBytes(err) {
		return nil, errTooLarge
	}
	return body, err
}

// isMaxBytes reports whether err is http.MaxBytesReader's: apart from
// readBody, so that the error it looks for is allocated only for a read
// that failed.
func isMaxBytes(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// readAll is io.ReadAll into a buffer sized for a declared length n (at
// most the bound, readBody checked), so that a body of the length its
// header gives is read without growing the buffer; a body that is longer
// or has no Content-Length grows it as io.ReadAll would.
func readAll(r io.Reader, n int64) ([]byte, error) {
	b := make([]byte, 0, max(n, 0)+1) // +1: room to see the end
	for {
		k, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// forward sends a live request over the device link and writes the
// device's answer. It returns false, having written nothing, when the
// device never got the request (the link was gone).
func (s *Relay) forward(w http.ResponseWriter, r *http.Request, agent, caller did.DID, version string, body []byte, req rpcRequest) bool {
	// A wait for the device to answer over the network: real time, on
	// clock.Unscaled (the clock package's rule).
	ctx, cancel := clock.WithTimeout(r.Context(), clock.Unscaled(s.clk), s.cfg.Limits.LiveTimeout)
	defer cancel()
	resp, err := s.forwardLink(ctx, agent.String(), wire.Request{From: caller.String(), Version: version, Extensions: r.Header.Get("A2A-Extensions"), Body: body})
	switch {
	case errors.Is(err, server.ErrNotLinked):
		return false
	case err != nil:
		s.log.Warn("live request unanswered", "agent", agent.String(), "err", err)
		s.metrics.live(agent.String(), "unanswered")
		answer(w, req, http.StatusGatewayTimeout, -32603, profileAnswer{Error: tokenUnanswered, Message: "the agent's device did not answer; the request may or may not have been processed"}, 0)
		return true
	}
	s.metrics.live(agent.String(), "answered")
	status := resp.Status
	if status < 200 || status > 599 {
		status = http.StatusBadGateway
	}
	ct := resp.ContentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	w.Write(resp.Body)
	return true
}

// offline answers a request the agent does not take live: store and
// forward where the mode allows it, refusal where it does not.
func (s *Relay) offline(w http.ResponseWriter, r *http.Request, agent, caller did.DID, version string, body []byte, req rpcRequest, rc wake.Verdict, b queuebounds.Bounds, now time.Time, la linkAsked) {
	id := agent.String()
	if !rc.Queue {
		s.metrics.enqueue(id, "refused")
		answerAsleep(w, req, false, rc.RetryAfter)
		return
	}
	if s.refused(w, id, version, body, req, rc.RetryAfter) || s.relayQueueFull(r.Context(), w, req, id, len(body)) {
		return
	}
	unlock, ok := s.tenantQueueRoom(r.Context(), w, req, agent, len(body), now)
	if !ok {
		return
	}
	// The commit must not be abandoned because the sender hung up: a
	// record is either stored and answered, or neither.
	rec, err := s.cfg.Stores.Queue.Enqueue(context.WithoutCancel(r.Context()), queue.Record{Agent: id, From: caller.String(), Kind: s.deferred.kind(id, caller.String(), req.kind), Body: body}, b, now)
	unlock(err == nil || errors.Is(err, queue.ErrUnconfirmed))
	if err != nil {
		s.answerNotStored(w, req, id, caller, b, err)
		return
	}
	s.metrics.enqueue(id, "queued")
	s.notifyLink(id, rec.Seq, la)
	answerAsleep(w, req, true, rc.RetryAfter)
}

// answerNotStored answers, and reports, a request whose enqueue failed
// with err.
func (s *Relay) answerNotStored(w http.ResponseWriter, req rpcRequest, id string, caller did.DID, b queuebounds.Bounds, err error) {
	var fe *queue.FullError
	switch {
	case errors.As(err, &fe):
		s.metrics.enqueue(id, "full_"+fe.Kind)
		answerFull(w, req, fe, b, caller.String())
	case errors.Is(err, queue.ErrTooLarge):
		s.metrics.enqueue(id, "too_large")
		answerTooLarge(w, b.MaxMessageSize)
	case errors.Is(err, queue.ErrUnconfirmed):
		s.metrics.enqueue(id, "unconfirmed")
		s.storeUnconfirmed(w, req, id, err)
	default:
		s.metrics.enqueue(id, "error")
		s.storeFailedRPC(w, req, err)
	}
}

// refused answers, and reports, a request the relay does not store although
// the agent's mode allows storing: what the agent would refuse whatever its
// state is refused now, with the agent's own answer.
func (s *Relay) refused(w http.ResponseWriter, id, version string, body []byte, req rpcRequest, retry int) bool {
	if req.method != "" && !isSend(version, req.method) {
		// Reads of tasks and the like cannot be answered later; only
		// message submissions are worth storing. A submission named for
		// the other A2A version would fail on the device much later: say so
		// now instead.
		s.metrics.enqueue(id, "refused")
		if isSend(otherVersion(version), req.method) {
			answer(w, req, http.StatusBadRequest, -32601, profileAnswer{Error: "method_not_found", Message: req.method + " is not an A2A " + version + " method (A2A-Version decides)"}, 0)
			return true
		}
		answerAsleep(w, req, false, retry)
		return true
	}
	// A message with nothing the agent takes (plain text, say) would be
	// dropped at dequeue; awake, the agent answers it at once. Give that
	// answer (runtime/live.go: HTTP 200, the JSON-RPC error) now.
	if req.refusal != nil {
		s.metrics.enqueue(id, "no_object")
		httpjson.Write(w, http.StatusOK, a2a.NewError(req.id, req.refusal))
		return true
	}
	return false
}

func otherVersion(v string) string {
	if v == "1.0" {
		return "0.3"
	}
	return "1.0"
}
