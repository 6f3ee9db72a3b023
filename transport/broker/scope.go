package broker

import (
	"slices"

	"github.com/torpor-dev/torpor/did"
)

// Scope is a hosted relay's tenancy as the broker's ACL needs it
// (docs/tenants.md, docs/mqtt.md "Tenants"): which tenant a device is
// in, whom its owner named as the tenant's operators, and whether the
// owner lets the host see its devices. torpor-relay --tenants gives the
// broker its tenants ledger through it (store/tenants.Ledger).
type Scope interface {
	// DeviceTenant returns the tenant of the device dev; in is false for
	// a device in no tenant.
	DeviceTenant(dev did.DID) (t TenantView, in bool, err error)
	// IsTenantOperator reports whether some tenant's owner named d as
	// an operator.
	IsTenantOperator(d did.DID) (bool, error)
}

// TenantView is what the ACL reads of one tenant: the operators its
// owner named (in its signed operator list, transport/tenancy) and
// whether that list lets the host see the tenant's devices.
type TenantView struct {
	Operators       []did.DID
	HostSeesDevices bool
}

// role is what a client's DID is to the broker.
type role int

const (
	roleDevice         role = iota
	roleOperator            // one of Config.Operators: the host's
	roleObserver            // one of Config.Observers: the host's reader
	roleTenantOperator      // named by a tenant's owner (Enrollment.Tenants)
)

// role returns what d is. A DID that is both the host's operator and a
// tenant's is the host's: the scope of each device decides what it may
// do (scoped).
func (h *authHook) role(d did.DID) role {
	switch {
	case h.isOperator(d):
		return roleOperator
	case h.isObserver(d):
		return roleObserver
	case h.scope != nil:
		ok, err := h.scope.IsTenantOperator(d)
		if err != nil {
			h.log.Warn("reading the tenants' operators failed; the client is taken for a device", "did", d, "err", err)
		}
		if ok {
			return roleTenantOperator
		}
	}
	return roleDevice
}

// scoped is the tenants' part of the ACL for an operator or observer of
// role r and DID d on the topics of the device named name: publishing
// commands (write) or reading its status, replies and events. Without a
// Scope every operator and observer passes, as on a relay with no
// tenants. A device in a tenant is the tenant's operators' alone; the
// host's operators and observers may read (never publish on) its topics
// only when its owner let the host see its devices. A device in no
// tenant is the host's alone. A name no device holds yet is the host's:
// a tenant's operator cannot know it is its tenant's. Deliveries are
// checked again, topic by topic, so a subscription through '+' or to a
// name bound later carries only what the subscriber may read.
func (h *authHook) scoped(r role, d did.DID, name string, write bool) bool {
	if h.scope == nil {
		return true
	}
	if name == "+" {
		return !write // every delivery is checked on its own topic
	}
	dev, bound, err := h.reg.lookup(name)
	if err != nil {
		h.log.Warn("reading the device names failed; the topic is refused", "name", name, "err", err)
		return false
	}
	if !bound {
		return r != roleTenantOperator
	}
	t, in, err := h.scope.DeviceTenant(dev)
	if err != nil {
		h.log.Warn("reading a device's tenant failed; the topic is refused", "device", dev, "err", err)
		return false
	}
	switch {
	case !in:
		return r != roleTenantOperator
	case slices.Contains(t.Operators, d):
		return true
	default:
		return r != roleTenantOperator && !write && t.HostSeesDevices
	}
}
