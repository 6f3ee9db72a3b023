package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// checkEnrolment verifies a device's enrolment (wire.State.Enrolment) for
// agent and returns the owner who signed it: a Governed Object issued and
// signed (Ed25519, RFC 8032, over its RFC 8785 form: governed) by one of
// owners, with purpose wire.PurposeEnrolment, not expired at the relay's
// clock, whose payload names agent.
func (s *Relay) checkEnrolment(b []byte, agent did.DID) (did.DID, error) {
	o, err := governed.Parse(b)
	if err != nil {
		return did.DID{}, fmt.Errorf("enrolment: %v", err)
	}
	if !slices.Contains(s.cfg.Access.Owners, o.Issuer) && !s.isTenant(o.Issuer) {
		return did.DID{}, fmt.Errorf("enrolment signed by %s, which is not an owner this relay trusts (--owner)", o.Issuer)
	}
	if err := o.VerifySignature(); err != nil {
		return did.DID{}, fmt.Errorf("enrolment: %v", err)
	}
	if o.Governance.Purpose != wire.PurposeEnrolment {
		return did.DID{}, fmt.Errorf("enrolment has purpose %q, want %q", o.Governance.Purpose, wire.PurposeEnrolment)
	}
	if exp, ok := o.Expiry(); !ok || !s.clk.Now().Before(exp) {
		return did.DID{}, fmt.Errorf("enrolment expired at %s (relay time %s): the owner issues a new one (torporctl enrol)", exp.UTC().Format("2006-01-02T15:04:05Z"), s.clk.Now().UTC().Format("2006-01-02T15:04:05Z"))
	}
	var p wire.EnrolmentPayload
	if err := json.Unmarshal(o.Payload, &p); err != nil || p.Device != agent.String() {
		return did.DID{}, fmt.Errorf("enrolment names device %q, not this one", p.Device)
	}
	return o.Issuer, nil
}

// enrol admits agent when the state it published carries an enrolment by
// an owner the relay trusts and it is not admitted yet; it reports
// whether it did. An enrolment that does not verify leaves the device on
// probation, and says why in the relay's log. The device's link, which
// announced probation's ceiling, is dropped, so that it links again for
// the relay's (as after an operator's admission).
func (s *Relay) enrol(ctx context.Context, agent did.DID, st wire.State) bool {
	if len(st.Enrolment) == 0 || (len(s.cfg.Access.Owners) == 0 && s.cfg.Stores.Tenants == nil) {
		return false
	}
	if s.admitted(ctx, agent.String()) {
		s.joinTenant(agent, st.Enrolment)
		return false
	}
	owner, err := s.checkEnrolment(st.Enrolment, agent)
	if err != nil {
		s.log.Warn("enrolment refused; the device stays on probation until an operator admits it", "agent", agent.String(), "err", err)
		s.adm.refusals.WithLabelValues("enrolment").Inc()
		return false
	}
	if !s.tenantEnrol(owner, agent) {
		s.adm.refusals.WithLabelValues("tenant").Inc()
		return false
	}
	if err := s.cfg.Stores.States.Admit(ctx, agent.String()); err != nil {
		s.log.Warn("admitting an enrolled device failed; it stays on probation", "agent", agent.String(), "owner", owner.String(), "err", err)
		return false
	}
	s.adm.mu.Lock()
	s.adm.known[agent.String()] = true
	s.adm.mu.Unlock()
	s.log.Info("agent admitted by its owner's enrolment", "agent", agent.String(), "owner", owner.String())
	return true
}
