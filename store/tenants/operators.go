package tenants

import (
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// SetOperators replaces a tenant's operators by the list in obj: a
// Governed Object with purpose PurposeOperators, signed (Ed25519, RFC
// 8032, over its RFC 8785 form: package governed) by a tenant's owner, not
// expired on the relay's clock, issued after the list it replaces. It
// returns the tenant.
func (l *Ledger) SetOperators(obj []byte) (did.DID, error) {
	o, list, err := tenancy.ParseOperatorList(obj)
	if err != nil {
		return did.DID{}, err
	}
	if exp, ok := o.Expiry(); ok && !l.clk.Now().Before(exp) {
		return did.DID{}, fmt.Errorf("tenants: operator list expired at %s; the owner signs a new one", exp.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return o.Issuer, l.update(func(tx *bolt.Tx) error {
		t, err := getTenant(tx, o.Issuer)
		if err != nil {
			return fmt.Errorf("%w: the operator list is signed by %s", err, o.Issuer)
		}
		if !o.IssuedAt.After(t.ListIssued) {
			return fmt.Errorf("tenants: operator list issued %s is not newer than the tenant's (%s)", o.IssuedAt.UTC().Format("2006-01-02T15:04:05.000Z"), t.ListIssued.UTC().Format("2006-01-02T15:04:05.000Z"))
		}
		t.Operators, t.HostSeesDevices, t.ListIssued = list.Operators, list.HostSeesDevices, o.IssuedAt
		return putJSON(tx, bucketTenants, []byte(t.Owner), t)
	})
}

// OperatorTenants returns the tenants whose owners name op as an
// operator, ordered by owner DID.
func (l *Ledger) OperatorTenants(op did.DID) ([]did.DID, error) {
	ts, err := l.Tenants()
	var out []did.DID
	for _, t := range ts {
		if slices.Contains(t.Operators, op.String()) {
			out = append(out, t.Owner)
		}
	}
	return out, err
}

// MayAct reports whether op may act on device (purge its queue, admit,
// halt or update it): only an operator its tenant's owner named may, and
// so never the host for a device in a tenant. A device in no tenant is
// the relay's own (ok false, nil error: the relay's operators decide).
func (l *Ledger) MayAct(op, device did.DID) (inTenant bool, err error) {
	owner, ok, err := l.TenantOf(device)
	if err != nil || !ok {
		return false, err
	}
	t, err := l.Tenant(owner)
	if err != nil {
		return true, err
	}
	if !slices.Contains(t.Operators, op.String()) {
		return true, fmt.Errorf("%w: %s is not named by the owner of tenant %s", ErrNotOperator, op, owner)
	}
	return true, nil
}
