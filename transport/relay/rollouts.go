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
	"github.com/torpor-dev/torpor/internal/httpjson"
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

// operatorTenantRolloutsPath is a tenant's rollouts on a hosted relay
// (operatorapi.TenantRolloutsPath), with the endpoints of
// operatorapi.RolloutsPath under it.
const operatorTenantRolloutsPath = "/operator/tenants/{did}/rollouts"

// rolloutRoutes adds the operator endpoints of rollouts: the relay's own
// (operatorapi.RolloutsPath) and, with tenants, each tenant's
// (operatorTenantRolloutsPath; docs/updates.md, "Rollouts").
func (s *Relay) rolloutRoutes(m *http.ServeMux) {
	roots := []string{operatorapi.RolloutsPath}
	if s.cfg.Stores.Tenants != nil {
		roots = append(roots, operatorTenantRolloutsPath)
	}
	for _, p := range roots {
		m.HandleFunc("POST "+p, s.serveRolloutStart)
		m.HandleFunc("GET "+p, s.serveRolloutList)
		m.HandleFunc("GET "+p+"/{id}", s.serveRolloutGet)
		m.HandleFunc("POST "+p+"/{id}/{action}", s.serveRolloutChange)
	}
}

// rolloutScope is whose rollouts a request acts on, and who asks.
type rolloutScope struct {
	caller did.DID
	// tenant is the owner DID of the tenant whose rollouts they are (the
	// request's path is under operatorTenantRolloutsPath); zero for the
	// relay's own operators' rollouts.
	tenant did.DID
}

// owner is the scope's tenant as rollout.Spec.Tenant holds it: empty
// for the relay's own rollouts.
func (sc rolloutScope) owner() string {
	if sc.tenant.IsZero() {
		return ""
	}
	return sc.tenant.String()
}

// rolloutCaller authenticates the caller of a rollout endpoint and
// returns the scope it acts in. Under operatorapi.RolloutsPath only the
// relay's own operators are accepted (a tenant's operator is refused:
// those rollouts are the relay's); under a tenant's path only the
// operators the tenant's owner named (tenantOperator). It answers 404 on
// a relay without a rollouts store.
func (s *Relay) rolloutCaller(w http.ResponseWriter, r *http.Request) (rolloutScope, bool) {
	caller, ok := s.operator(w, r)
	if !ok {
		return rolloutScope{}, false
	}
	sc := rolloutScope{caller: caller}
	if r.PathValue("did") != "" {
		info, ok := s.tenantOperator(w, r, caller, "rollouts")
		if !ok {
			return rolloutScope{}, false
		}
		sc.tenant = info.Owner
	} else if !s.operators[caller.String()] {
		s.recordOperator(r, caller, "", "a tenant's operator")
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "not_operator", "message": "these rollouts are the relay's own operators' (--operator); a tenant's operators run the tenant's at /operator/tenants/{owner}/rollouts (torporctl update rollout --tenant)"})
		return rolloutScope{}, false
	}
	if s.rollouts == nil {
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "no_rollouts", "message": "this relay keeps no rollouts (it has no rollouts store)"})
		return rolloutScope{}, false
	}
	return sc, true
}

// serveRolloutStart is POST /operator/rollouts (or a tenant's): plan and
// store a rollout of the scope's devices (those the request names, or
// every one).
func (s *Relay) serveRolloutStart(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.rolloutCaller(w, r)
	if !ok {
		return
	}
	caller := sc.caller
	var req operatorapi.RolloutStart
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRolloutBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.recordOperator(r, caller, "start", "bad request")
		httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "bad_request", "message": "the body is not a rollout start: " + err.Error()})
		return
	}
	devices, err := s.rolloutDevices(r.Context(), sc, req.Devices)
	if errors.Is(err, tenants.ErrNotOperator) || errors.Is(err, errNotTenantDevice) {
		s.recordOperator(r, caller, "start "+req.ID, "a device of another tenant, or of none")
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "not_tenant_operator", "message": notYourDevice(sc, err)})
		return
	}
	if err != nil {
		s.recordOperator(r, caller, "start "+req.ID, "bad devices")
		s.rolloutFailed(w, err)
		return
	}
	spec := rolloutSpec(req)
	spec.Tenant = sc.owner()
	ro, err := s.rollouts.Start(r.Context(), spec, devices)
	if err != nil {
		s.recordOperator(r, caller, "start "+req.ID, "refused")
		s.rolloutFailed(w, err)
		return
	}
	s.recordOperator(r, caller, "start "+ro.ID+" of "+ro.Target.Version, "")
	s.log.Info("rollout started", "rollout", ro.ID, "tenant", ro.Tenant, "version", ro.Target.Version, "devices", len(devices), "waves", len(ro.Waves), "operator", caller.String())
	httpjson.Write(w, http.StatusOK, rolloutView(ro))
}

// notYourDevice is the message of a start refused for a device the
// scope may not update.
func notYourDevice(sc rolloutScope, err error) string {
	if sc.tenant.IsZero() {
		return err.Error() + ": a device in a tenant is updated by its owner's operators, not the relay's (docs/tenants.md)"
	}
	return err.Error() + ": a tenant's rollout takes only the tenant's own devices (docs/tenants.md)"
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

// Errors of rolloutDevices.
var (
	// errUnknownDevice is wrapped for a DID the relay holds no state of.
	errUnknownDevice = errors.New("relay: not a device of this relay")
	// errNotTenantDevice is wrapped, with the DID, for a device a
	// tenant's rollout names that is not in the tenant.
	errNotTenantDevice = errors.New("relay: not a device of the rollout's tenant")
)

// rolloutDevices returns the devices of sc's rollout with where in the
// hour their windows open: the named ones, or when none is named every
// device of the scope with a state. A tenant's rollout takes only the
// tenant's devices (tenantsDevices). A rollout of the relay's own
// operators, on a hosted relay, takes only the devices the caller may act
// on (callersDevices): naming a device of a tenant whose owner did not
// name the caller is refused (tenants.ErrNotOperator), and "every device"
// is every device the caller may act on.
func (s *Relay) rolloutDevices(ctx context.Context, sc rolloutScope, ids []string) ([]rollout.Device, error) {
	st := s.cfg.Stores.States
	named := len(ids) > 0
	var err error
	switch {
	case !sc.tenant.IsZero():
		ids, err = s.tenantsDevices(sc.tenant, ids)
	case !named:
		if ids, err = st.Agents(ctx); err == nil {
			ids, err = s.callersDevices(sc.caller, ids, false)
		}
	default:
		ids, err = s.callersDevices(sc.caller, ids, true)
	}
	if err != nil {
		return nil, err
	}
	if len(ids) > rollout.MaxDevices {
		return nil, errors.Join(rollout.ErrBadSpec, errors.New("more devices than a rollout takes"))
	}
	var out []rollout.Device
	for _, id := range ids {
		a, err := st.Get(ctx, id)
		switch {
		case errors.Is(err, agents.ErrUnknownAgent) && !named:
			continue // a tenant's device the relay holds no state of
		case errors.Is(err, agents.ErrUnknownAgent):
			return nil, errors.Join(errUnknownDevice, errors.New(id))
		case err != nil:
			return nil, err
		}
		out = append(out, rollout.Device{ID: id, Minute: a.Window.Minute, Second: wakeSecondOf(a)})
	}
	return out, nil
}

// tenantsDevices returns ids when each is a device of owner's tenant
// (an error wrapping errNotTenantDevice names the first that is not: of
// another tenant, of none, or no device at all), or every device of the
// tenant when ids is empty.
func (s *Relay) tenantsDevices(owner did.DID, ids []string) ([]string, error) {
	l := s.cfg.Stores.Tenants
	if len(ids) == 0 {
		return l.Devices(owner)
	}
	for _, id := range ids {
		var of did.DID
		in := false
		if dev, err := did.Parse(id); err == nil {
			if of, in, err = l.TenantOf(dev); err != nil {
				return nil, err
			}
		}
		if !in || of != owner {
			return nil, fmt.Errorf("%w: device %s is not in tenant %s", errNotTenantDevice, id, owner)
		}
	}
	return ids, nil
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
		httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "bad_rollout", "message": err.Error()})
	case errors.Is(err, rollout.ErrExists), errors.Is(err, rollout.ErrState):
		httpjson.Write(w, http.StatusConflict, map[string]any{"error": "rollout_conflict", "message": err.Error()})
	case errors.Is(err, rollout.ErrNotFound):
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "no_such_rollout", "message": err.Error()})
	default:
		s.storeFailed(w, err)
	}
}

// serveRolloutList is GET /operator/rollouts (or a tenant's): the
// scope's rollouts, and no other's.
func (s *Relay) serveRolloutList(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.rolloutCaller(w, r)
	if !ok {
		return
	}
	rs, err := s.rollouts.List(r.Context())
	if err != nil {
		s.rolloutFailed(w, err)
		return
	}
	l := operatorapi.RolloutList{Rollouts: []operatorapi.Rollout{}}
	for _, ro := range rs {
		if ro.Tenant == sc.owner() {
			l.Rollouts = append(l.Rollouts, rolloutView(ro))
		}
	}
	httpjson.Write(w, http.StatusOK, l)
}

// scopedRollout returns the scope's rollout id, stepped to now; one of
// another scope (the relay's, or another tenant's) is not found.
func (s *Relay) scopedRollout(ctx context.Context, sc rolloutScope, id string) (*rollout.Rollout, error) {
	if rollouts.CheckID(id) != nil {
		return nil, fmt.Errorf("%w: %q", rollout.ErrNotFound, id)
	}
	ro, err := s.rollouts.Get(ctx, rollouts.Key(sc.owner(), id))
	if err == nil && ro.Tenant != sc.owner() {
		return nil, fmt.Errorf("%w: %s", rollout.ErrNotFound, id)
	}
	return ro, err
}

// serveRolloutGet is GET /operator/rollouts/{id} (or a tenant's).
func (s *Relay) serveRolloutGet(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.rolloutCaller(w, r)
	if !ok {
		return
	}
	ro, err := s.scopedRollout(r.Context(), sc, r.PathValue("id"))
	if err != nil {
		s.rolloutFailed(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, rolloutView(ro))
}

// serveRolloutChange is POST /operator/rollouts/{id}/{pause,resume,abort}
// (or a tenant's).
func (s *Relay) serveRolloutChange(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.rolloutCaller(w, r)
	if !ok {
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	var body operatorapi.RolloutAction
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&body); err != nil {
		httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "bad_request", "message": "the body is not a rollout action: " + err.Error()})
		return
	}
	ro, err := s.scopedRollout(r.Context(), sc, id)
	if err == nil {
		ro, err = s.changeRollout(r.Context(), ro.Key(), action, body.Reason)
	}
	if errors.Is(err, errNoSuchAction) {
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "no_such_action", "message": "want pause, resume or abort"})
		return
	}
	if err != nil {
		s.recordOperator(r, sc.caller, action+" "+id, err.Error())
		s.rolloutFailed(w, err)
		return
	}
	s.recordOperator(r, sc.caller, action+" "+id, "")
	s.log.Info("rollout "+action, "rollout", id, "tenant", ro.Tenant, "state", ro.State, "operator", sc.caller.String())
	httpjson.Write(w, http.StatusOK, rolloutView(ro))
}

// errNoSuchAction is returned by changeRollout for an action it does not
// know.
var errNoSuchAction = errors.New("relay: no such rollout action")

// changeRollout pauses, resumes or aborts the rollout stored under key.
func (s *Relay) changeRollout(ctx context.Context, key, action, reason string) (*rollout.Rollout, error) {
	switch action {
	case "pause":
		return s.rollouts.Pause(ctx, key, reason)
	case "resume":
		return s.rollouts.Resume(ctx, key)
	case "abort":
		return s.rollouts.Abort(ctx, key, reason)
	}
	return nil, errNoSuchAction
}
