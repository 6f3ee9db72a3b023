package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
)

// maxRolloutBody bounds a rollout's start request: MaxDevices DIDs and
// the rest.
const maxRolloutBody = rollout.MaxDevices*128 + 64<<10

// rolloutManager runs the rollouts in st; nil when st is nil.
func rolloutManager(st rollouts.Store, clk clock.Clock) *rollout.Manager {
	if st == nil {
		return nil
	}
	return &rollout.Manager{Store: st, Clock: clk}
}

// rolloutRoutes adds the operator endpoints of rollouts
// (operatorapi.RolloutsPath; docs/updates.md, "Rollouts").
func (s *Relay) rolloutRoutes(m *http.ServeMux) {
	p := operatorapi.RolloutsPath
	m.HandleFunc("POST "+p, s.serveRolloutStart)
	m.HandleFunc("GET "+p, s.serveRolloutList)
	m.HandleFunc("GET "+p+"/{id}", s.serveRolloutGet)
	m.HandleFunc("POST "+p+"/{id}/{action}", s.serveRolloutChange)
}

// rolloutCaller authenticates one of the relay's own operators for a
// rollout endpoint (a tenant's operator is refused: a rollout spans the
// relay's devices), and answers 404 on a relay without a rollouts store.
func (s *Relay) rolloutCaller(w http.ResponseWriter, r *http.Request) (did.DID, bool) {
	caller, ok := s.operator(w, r)
	if ok && !s.operators[caller.String()] {
		s.recordOperator(r, caller, "", "a tenant's operator")
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "not_operator", "message": "rollouts are for the relay's own operators (--operator), not a tenant's"})
		return did.DID{}, false
	}
	if ok && s.rollouts == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no_rollouts", "message": "this relay keeps no rollouts (it has no rollouts store)"})
		return did.DID{}, false
	}
	return caller, ok
}

// serveRolloutStart is POST /operator/rollouts: plan and store a rollout
// of the relay's devices (those the request names, or every one).
func (s *Relay) serveRolloutStart(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.rolloutCaller(w, r)
	if !ok {
		return
	}
	var req operatorapi.RolloutStart
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRolloutBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.recordOperator(r, caller, "start", "bad request")
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "bad_request", "message": "the body is not a rollout start: " + err.Error()})
		return
	}
	devices, err := s.rolloutDevices(r.Context(), caller, req.Devices)
	if errors.Is(err, tenants.ErrNotOperator) {
		s.recordOperator(r, caller, "start "+req.ID, "a tenant's device")
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "not_tenant_operator",
			"message": err.Error() + ": a device in a tenant is updated by its owner's operators, not the relay's (docs/tenants.md)"})
		return
	}
	if err != nil {
		s.recordOperator(r, caller, "start "+req.ID, "bad devices")
		s.rolloutFailed(w, err)
		return
	}
	ro, err := s.rollouts.Start(r.Context(), rolloutSpec(req), devices)
	if err != nil {
		s.recordOperator(r, caller, "start "+req.ID, "refused")
		s.rolloutFailed(w, err)
		return
	}
	s.recordOperator(r, caller, "start "+ro.ID+" of "+ro.Target.Version, "")
	s.log.Info("rollout started", "rollout", ro.ID, "version", ro.Target.Version, "devices", len(devices), "waves", len(ro.Waves), "operator", caller.String())
	writeJSON(w, http.StatusOK, rolloutView(ro))
}

func rolloutSpec(req operatorapi.RolloutStart) rollout.Spec {
	return rollout.Spec{
		ID:       req.ID,
		Target:   rollout.Target{Name: req.Target.Name, Version: req.Target.Version, SHA256: req.Target.SHA256},
		Percents: req.Percents,
		Criteria: rollout.Criteria{FailureTypes: req.Criteria.FailureTypes, MinExecuted: req.Criteria.MinExecuted, ThresholdPercent: req.Criteria.ThresholdPercent},
		WaveTime: time.Duration(req.WaveTime) * time.Second,
	}
}

// errUnknownDevice is wrapped by rolloutDevices' error for a DID the
// relay holds no state of.
var errUnknownDevice = errors.New("relay: not a device of this relay")

// rolloutDevices returns the named devices (every device with a state
// when none is named) with where in the hour their windows open. On a
// hosted relay a rollout is the caller's: naming a device of a tenant
// whose owner did not name the caller is refused (tenants.ErrNotOperator),
// and "every device" is every device the caller may act on.
func (s *Relay) rolloutDevices(ctx context.Context, caller did.DID, ids []string) ([]rollout.Device, error) {
	st := s.cfg.Stores.States
	named := len(ids) > 0
	if !named {
		var err error
		if ids, err = st.Agents(ctx); err != nil {
			return nil, err
		}
	}
	ids, err := s.callersDevices(caller, ids, named)
	if err != nil {
		return nil, err
	}
	if len(ids) > rollout.MaxDevices {
		return nil, errors.Join(rollout.ErrBadSpec, errors.New("more devices than a rollout takes"))
	}
	var out []rollout.Device
	for _, id := range ids {
		a, err := st.Get(ctx, id)
		if errors.Is(err, agents.ErrUnknownAgent) {
			return nil, errors.Join(errUnknownDevice, errors.New(id))
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rollout.Device{ID: id, Minute: a.Window.Minute, Second: wakeSecondOf(a)})
	}
	return out, nil
}

// callersDevices keeps of ids the devices caller may act on (mayAct's
// rule); with named, any other is an error naming it.
func (s *Relay) callersDevices(caller did.DID, ids []string, named bool) ([]string, error) {
	l := s.cfg.Stores.Tenants
	if l == nil {
		return ids, nil
	}
	var out []string
	for _, id := range ids {
		dev, err := did.Parse(id)
		if err != nil {
			return nil, errors.Join(errUnknownDevice, errors.New(id))
		}
		_, err = l.MayAct(caller, dev)
		switch {
		case errors.Is(err, tenants.ErrNotOperator) && named:
			return nil, fmt.Errorf("%w: %s", err, id)
		case errors.Is(err, tenants.ErrNotOperator):
			continue // a tenant's device, left to its owner's operators
		case err != nil:
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// wakeSecondOf is the second of its window's minute a device wakes at:
// the one the relay assigned, else its window's offset's.
func wakeSecondOf(a agents.State) int {
	if a.WakeSecondSet {
		return a.WakeSecond
	}
	return int(a.Window.Offset/time.Second) % 60
}

// rolloutFailed answers a refused or failed rollout request.
func (s *Relay) rolloutFailed(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, rollout.ErrBadSpec), errors.Is(err, errUnknownDevice):
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "bad_rollout", "message": err.Error()})
	case errors.Is(err, rollout.ErrExists), errors.Is(err, rollout.ErrState):
		writeJSON(w, http.StatusConflict, map[string]any{"error": "rollout_conflict", "message": err.Error()})
	case errors.Is(err, rollout.ErrNotFound):
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no_such_rollout", "message": err.Error()})
	default:
		s.storeFailed(w, err)
	}
}

// serveRolloutList is GET /operator/rollouts.
func (s *Relay) serveRolloutList(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.rolloutCaller(w, r); !ok {
		return
	}
	rs, err := s.rollouts.List(r.Context())
	if err != nil {
		s.rolloutFailed(w, err)
		return
	}
	l := operatorapi.RolloutList{Rollouts: []operatorapi.Rollout{}}
	for _, ro := range rs {
		l.Rollouts = append(l.Rollouts, rolloutView(ro))
	}
	writeJSON(w, http.StatusOK, l)
}

// serveRolloutGet is GET /operator/rollouts/{id}.
func (s *Relay) serveRolloutGet(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.rolloutCaller(w, r); !ok {
		return
	}
	ro, err := s.rollouts.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.rolloutFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rolloutView(ro))
}

// serveRolloutChange is POST /operator/rollouts/{id}/{pause,resume,abort}.
func (s *Relay) serveRolloutChange(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.rolloutCaller(w, r)
	if !ok {
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	var body operatorapi.RolloutAction
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "bad_request", "message": "the body is not a rollout action: " + err.Error()})
		return
	}
	var ro *rollout.Rollout
	var err error
	switch action {
	case "pause":
		ro, err = s.rollouts.Pause(r.Context(), id, body.Reason)
	case "resume":
		ro, err = s.rollouts.Resume(r.Context(), id)
	case "abort":
		ro, err = s.rollouts.Abort(r.Context(), id, body.Reason)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no_such_action", "message": "want pause, resume or abort"})
		return
	}
	if err != nil {
		s.recordOperator(r, caller, action+" "+id, err.Error())
		s.rolloutFailed(w, err)
		return
	}
	s.recordOperator(r, caller, action+" "+id, "")
	s.log.Info("rollout "+action, "rollout", id, "state", ro.State, "operator", caller.String())
	writeJSON(w, http.StatusOK, rolloutView(ro))
}
