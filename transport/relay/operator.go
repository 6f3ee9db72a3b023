package relay

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// The operator's queue endpoints (docs/operations.md, "A device's queue"):
//
//	GET    /operator/queue/{did}[?sender=DID]      list the records
//	DELETE /operator/queue/{did}?sender=DID|all=1  purge them
//
// Both need a DID Bearer token (audience the relay's origin) of an
// operator DID of Config.Access.Operators; records are listed by their metadata,
// never their bodies, which are the senders' (usually MLS ciphertext).
const operatorQueuePath = "/operator/queue/{did}"

// maxOperatorSpent bounds the operator tokens a relay remembers itself
// (without a shared memory), each until its expiry and the clock skew.
const maxOperatorSpent = 4096

// queueEntry is one listed record.
type queueEntry struct {
	Seq        uint64    `json:"seq"`
	From       string    `json:"from"`
	Kind       string    `json:"kind"`
	Bytes      int       `json:"bytes"`
	EnqueuedAt time.Time `json:"enqueuedAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// operator authenticates an operator request. The token must be an
// operator token for this request's method and path
// (bearer.OperatorPurpose, at most bearer.MaxOperatorLifetime) that the
// relay has not accepted before (Relay.opSpent: Config.Stores.Shared, the
// fleet's on JetStream), and the request must not
// come from a browser (no Origin header: torporctl sends none). It answers
// 401 for a missing, bad, replayed or ordinary token (an older torporctl's:
// the answer says to upgrade), 403 for an Origin or for a DID that is not
// an operator's, 503 while the memory of spent tokens is full or cannot be
// reached, and returns false then.
func (s *Relay) operator(w http.ResponseWriter, r *http.Request) (did.DID, bool) {
	if o := r.Header.Get("Origin"); o != "" {
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "origin_refused",
			"message": "the operator endpoints are for torporctl, not for browsers: a request with an Origin header is refused"})
		return did.DID{}, false
	}
	v := *s.verifier
	v.Purpose, v.MaxLifetime = bearer.OperatorPurpose(r.Method, r.URL.EscapedPath()), bearer.MaxOperatorLifetime
	tok, err := v.VerifyToken(r.Header.Get("Authorization"))
	if err == nil {
		err = s.opSpent.Spend(r.Context(), sha256.Sum256([]byte(tok.String())), time.Unix(tok.Claims.Exp, 0).Add(bearer.DefaultSkew), s.clk.Now())
		switch {
		case errors.Is(err, shared.ErrReplayed):
			s.recordOperator(r, tok.DID(), "", "operator token already used")
			err = &bearer.Error{Check: bearer.ErrReplayed, Detail: "transport token: token already used", Reason: "a single-use token; issue a new one for every request"}
		case err != nil:
			msg := "too many operator tokens in use; try again in a few minutes"
			if !errors.Is(err, shared.ErrFull) {
				msg = "the relay cannot reach its memory of spent operator tokens; try again later"
			}
			httpjson.Write(w, http.StatusServiceUnavailable, map[string]any{"error": "operator_busy", "message": msg})
			return did.DID{}, false
		}
	}
	if err != nil {
		operatorUnauthorized(w, r, err)
		return did.DID{}, false
	}
	caller := tok.DID()
	if !s.operators[caller.String()] && !s.isTenantOperator(caller) {
		msg := "this DID is not one of the relay's operators (--operator, --operators-file)"
		if len(s.operators) == 0 {
			msg = "the relay has no operator (--operator, --operators-file)"
		}
		s.recordOperator(r, caller, "", "not an operator of this relay")
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "not_operator", "message": msg})
		return did.DID{}, false
	}
	return caller, true
}

// errOrdinaryToken is the 401's detail for a token without the operator
// purpose: what a torporctl older than the operator tokens sends.
const errOrdinaryToken = "transport token: the operator endpoints take a single-use operator token bound to the request " +
	"(purpose " + bearer.PurposeOperator + "), not an ordinary one: upgrade torporctl"

// operatorUnauthorized answers 401 as bearerhttp.WriteUnauthorized does,
// with the detail also in "message", where torporctl's older releases
// read the reason of a refusal.
func operatorUnauthorized(w http.ResponseWriter, r *http.Request, err error) {
	detail := "invalid token"
	var e *bearer.Error
	if errors.As(err, &e) {
		detail = e.Detail
		if errors.Is(err, bearer.ErrPurpose) {
			detail = errOrdinaryToken
			if tok, perr := bearer.Parse(strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer"))); perr == nil && strings.HasPrefix(tok.Claims.Purpose, bearer.PurposeOperator+" ") {
				detail = "transport token: this operator token was minted for another request (" + tok.Claims.Purpose + ")"
			}
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="atom", error="invalid_token", error_description="`+strings.ReplaceAll(detail, `"`, "")+`"`)
	httpjson.Write(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized", "detail": detail, "message": detail})
}

// queueSelection is the agent and the optional sender an operator request
// names; all is the explicit all=1 of a purge.
type queueSelection struct {
	agent  did.DID
	sender string
	all    bool
}

func (s *Relay) queueRequest(w http.ResponseWriter, r *http.Request) (did.DID, queueSelection, bool) {
	op, ok := s.operator(w, r)
	if !ok {
		return did.DID{}, queueSelection{}, false
	}
	agent, ok := agentPath(w, r)
	if !ok || !s.mayAct(w, r, op, agent) {
		return did.DID{}, queueSelection{}, false
	}
	sel := queueSelection{agent: agent, all: r.URL.Query().Get("all") == "1"}
	if v := r.URL.Query().Get("sender"); v != "" {
		d, err := did.Parse(v)
		if err != nil {
			httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "bad_sender", "message": "sender: " + err.Error()})
			return did.DID{}, queueSelection{}, false
		}
		sel.sender = d.String()
	}
	return op, sel, true
}

// scanQueue returns the agent's live records, those of sel.sender only
// when it is set, and the seqs of its damaged records (of any sender:
// their sender cannot be trusted), which the store withholds.
func (s *Relay) scanQueue(r *http.Request, sel queueSelection) ([]queue.Record, []uint64, error) {
	var out []queue.Record
	var damaged []uint64
	var after uint64
	now := s.clk.Now()
	for {
		recs, bad, err := s.queue.next(r.Context(), sel.agent.String(), after, 500, now)
		if err != nil {
			return nil, nil, err
		}
		damaged = append(damaged, bad...)
		for _, rec := range recs {
			if sel.sender == "" || rec.From == sel.sender {
				out = append(out, rec)
			}
		}
		if len(recs) < 500 {
			return out, damaged, nil
		}
		after = recs[len(recs)-1].Seq
	}
}

func (s *Relay) serveQueueList(w http.ResponseWriter, r *http.Request) {
	_, sel, ok := s.queueRequest(w, r)
	if !ok {
		return
	}
	recs, damaged, err := s.scanQueue(r, sel)
	if err != nil {
		s.storeFailed(w, err)
		return
	}
	entries := make([]queueEntry, 0, len(recs))
	total := 0
	for _, rec := range recs {
		entries = append(entries, queueEntry{Seq: rec.Seq, From: rec.From, Kind: rec.Kind.String(), Bytes: len(rec.Body), EnqueuedAt: rec.EnqueuedAt.UTC(), ExpiresAt: rec.ExpiresAt.UTC()})
		total += len(rec.Body)
	}
	ans := map[string]any{"agent": sel.agent.String(), "records": entries, "messages": len(entries), "bytes": total}
	if len(damaged) > 0 {
		ans["damaged"] = damaged // withheld from the device (docs/operations.md, "Store faults")
	}
	httpjson.Write(w, http.StatusOK, ans)
}

var errNoSelection = errors.New("name the records to purge: sender=DID, or all=1 for every record")

// serveQueuePurge deletes the selected records (queue.Store.Ack, durable
// when it returns) and logs who purged what and how many.
func (s *Relay) serveQueuePurge(w http.ResponseWriter, r *http.Request) {
	op, sel, ok := s.queueRequest(w, r)
	if !ok {
		return
	}
	if (sel.sender == "") == !sel.all {
		s.recordOperator(r, op, "", "bad selection: "+errNoSelection.Error())
		httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "bad_selection", "message": errNoSelection.Error() + " (not both)"})
		return
	}
	recs, damaged, err := s.scanQueue(r, sel)
	if err != nil {
		s.storeFailed(w, err)
		return
	}
	seqs := make([]uint64, len(recs))
	total := 0
	for i, rec := range recs {
		seqs[i] = rec.Seq
		total += len(rec.Body)
	}
	if sel.all {
		seqs = append(seqs, damaged...) // all=1 takes the withheld records too
	}
	what := "all"
	if sel.sender != "" {
		what = "sender " + sel.sender
	}
	if err := s.cfg.Stores.Queue.Ack(r.Context(), sel.agent.String(), seqs); err != nil {
		s.recordOperator(r, op, what, "the store failed")
		s.storeFailed(w, err)
		return
	}
	s.recordOperator(r, op, fmt.Sprintf("%s: %d records, %d bytes", what, len(seqs), total), "")
	s.log.Info("queue purged by an operator", "operator", op.String(), "agent", sel.agent.String(), "records", what, "purged", len(seqs), "bytes", total)
	httpjson.Write(w, http.StatusOK, map[string]any{"agent": sel.agent.String(), "purged": len(seqs), "bytes": total})
}
