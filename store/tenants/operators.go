package tenants

import (
	"context"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
)

// SetOperators replaces a tenant's operators by the list in obj: a
// Governed Object with purpose PurposeOperators, signed (Ed25519, RFC
// 8032, over its RFC 8785 form: package governed) by a tenant's owner, not
// expired on the relay's clock, issued after the list it replaces. It
// returns the tenant.
func (l *Ledger) SetOperators(obj []byte) (did.DID, error) {
	o, list, err := CheckOperatorList(obj, l.clk.Now())
	if err != nil {
		return did.DID{}, err
	}
	return o.Issuer, l.update(func(tx *bolt.Tx) error {
		t, err := getTenant(tx, o.Issuer)
		if err != nil {
			return fmt.Errorf("%w: the operator list is signed by %s", err, o.Issuer)
		}
		if !o.IssuedAt.After(t.ListIssued) {
			return NotNewer(o.IssuedAt, t.ListIssued)
		}
		t.Operators, t.HostSeesDevices, t.ListIssued = list.Operators, list.HostSeesDevices, o.IssuedAt
		return putJSON(tx, bucketTenants, []byte(t.Owner), t)
	})
}

// OperatorTenants returns the tenants whose owners name op as an
// operator, ordered by owner DID.
func (l *Ledger) OperatorTenants(op did.DID) ([]did.DID, error) {
	return OperatorTenantsOf(l, op)
}

// MayAct reports whether op may act on device (purge its queue, admit,
// halt or update it): only an operator its tenant's owner named may, and
// so never the host for a device in a tenant. A device in no tenant is
// the relay's own (ok false, nil error: the relay's operators decide).
func (l *Ledger) MayAct(op, device did.DID) (inTenant bool, err error) {
	return MayActOn(l, op, device)
}

// Lock takes the lock name until unlock; the relay's bbolt ledger is one
// relay's, so a mutex per name in this process is the lock.
func (l *Ledger) Lock(_ context.Context, name string) (func(), error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sync.Mutex{}
	}
	m := l.locks[name]
	if m == nil {
		m = &sync.Mutex{}
		l.locks[name] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock, nil
}
