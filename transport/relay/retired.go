package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// tokenRetired is the error token of the answer for a retired agent.
const tokenRetired = "agent_retired"

// checkRetirement verifies a device's retirement statement
// (wire.State.Retirement) for agent and returns the successor it names: a
// Governed Object issued and signed by agent, with purpose
// wire.PurposeRetirement, whose payload names agent as "old" and another
// DID as "new". The link already proved that agent publishes it; the
// signature lets anyone the relay shows it to check it too.
func checkRetirement(b []byte, agent did.DID) (did.DID, error) {
	o, err := governed.Parse(b)
	if err != nil {
		return did.DID{}, fmt.Errorf("retirement: %v", err)
	}
	if o.Issuer != agent {
		return did.DID{}, fmt.Errorf("retirement issued by %s, not by the agent", o.Issuer)
	}
	if err := o.VerifySignature(); err != nil {
		return did.DID{}, fmt.Errorf("retirement: %v", err)
	}
	if o.Governance.Purpose != wire.PurposeRetirement {
		return did.DID{}, fmt.Errorf("retirement has purpose %q, want %q", o.Governance.Purpose, wire.PurposeRetirement)
	}
	var p struct{ Old, New string }
	if err := json.Unmarshal(o.Payload, &p); err != nil || p.Old != agent.String() {
		return did.DID{}, fmt.Errorf("retirement does not name the agent as the old DID")
	}
	next, err := did.Parse(p.New)
	if err != nil || next == agent {
		return did.DID{}, fmt.Errorf("retirement names no successor DID: %q", p.New)
	}
	return next, nil
}

// answerRetired answers a request for an agent whose key was rotated away:
// 410 Gone, never queued, naming the successor, where it is served, and
// the statement the old key signed.
func (s *Relay) answerRetired(w http.ResponseWriter, st agents.State) {
	httpjson.Write(w, http.StatusGone, struct {
		Error        string          `json:"error"`
		Message      string          `json:"message"`
		Queued       bool            `json:"queued"`
		Successor    string          `json:"successor"`
		SuccessorURL string          `json:"successorUrl,omitempty"`
		Retirement   json.RawMessage `json:"retirement,omitempty"`
	}{tokenRetired, "this agent's key was rotated; send to its successor", false, st.Successor,
		s.cfg.PublicURL + "/a/" + st.Successor, json.RawMessage(st.Retirement)})
}

// requestState returns the state of agent id for a request to it, or
// answers 404 (unknown agent), 410 (retired: answerRetired) or 500 and
// returns false.
func (s *Relay) requestState(w http.ResponseWriter, r *http.Request, id string) (agents.State, bool) {
	var reads StateReader = s.cfg.Stores.States
	if s.cfg.Stores.StateReads != nil {
		reads = s.cfg.Stores.StateReads
	}
	st, err := reads.Get(r.Context(), id)
	switch {
	case errors.Is(err, agents.ErrUnknownAgent):
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "unknown_agent", "message": "no device has published this agent"})
	case err != nil:
		s.storeFailed(w, err)
	case st.Successor != "":
		s.answerRetired(w, st)
	default:
		return st, true
	}
	return agents.State{}, false
}

// carryAdmission admits the successor of a retired agent that was off
// probation: a key rotation (torporctl device rotate-keys) keeps the
// device's admission. Like serveAdmit, it drops the successor's link, if
// this relay holds it, so that it links again under the relay's ceiling.
// A store that fails leaves the successor on probation, the safe side.
func (s *Relay) carryAdmission(ctx context.Context, old, successor string) {
	if !s.admitted(ctx, old) || s.admitted(ctx, successor) {
		return
	}
	if err := s.cfg.Stores.States.Admit(ctx, successor); err != nil {
		s.log.Warn("the successor of a retired agent stays on probation: store failed", "agent", old, "successor", successor, "err", err)
		return
	}
	s.adm.mu.Lock()
	s.adm.known[successor] = true
	s.adm.mu.Unlock()
	s.log.Info("agent admitted as its predecessor's successor", "agent", successor, "predecessor", old)
	s.link.Drop(successor, "admitted as a rotated key's successor: link again for the relay's bounds")
}
