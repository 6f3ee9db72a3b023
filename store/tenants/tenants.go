// Package tenants is the hosted relay's tenancy: a tenant is an owner DID,
// its devices are the ones that owner enrolled, its operators are the ones
// that owner named in a signed operator list, and the relay's own
// operator (the host) sets each tenant's quotas without holding any of its
// keys. Store is the ledger the relay uses; Ledger keeps the tenants,
// their devices and what they use in a bbolt file and checks each quota
// inside the transaction that spends it, so a quota holds exactly however
// many senders race for it (store/jsstore's Tenants keeps them in a
// JetStream bucket for relays that share a cluster; tenantstest is the
// contract both keep). Usage is a
// tenant's usage in one hour as a tenancy.Record signed by the relay's
// key, which the tenant verifies offline (torporctl tenant usage
// --verify). docs/tenants.md describes the model for operators.
package tenants

import (
	"errors"

	"github.com/torpor-dev/torpor/transport/tenancy"
)

// The tenancy types the ledger uses, under short names.
type (
	Quota      = tenancy.Quota
	Quotas     = tenancy.Quotas
	QuotaError = tenancy.QuotaError
)

// The quotas.
const (
	QuotaDevices         = tenancy.QuotaDevices
	QuotaQueuedBytes     = tenancy.QuotaQueuedBytes
	QuotaKeyPackageBytes = tenancy.QuotaKeyPackageBytes
	QuotaRequests        = tenancy.QuotaRequests
	QuotaUpdateBytes     = tenancy.QuotaUpdateBytes
	QuotaByteHours       = tenancy.QuotaByteHours
)

// The errors of a Ledger that are not quota refusals.
var (
	// ErrNoTenant: the DID is not a tenant of this relay.
	ErrNoTenant = errors.New("tenants: no such tenant")
	// ErrOtherTenant: the device is enrolled in another tenant.
	ErrOtherTenant = errors.New("tenants: the device belongs to another tenant")
	// ErrNotOperator: the operator is not named by the tenant's owner.
	ErrNotOperator = errors.New("tenants: not an operator of the device's tenant")
	// ErrUnderflow: a release of more than the tenant holds, which would
	// hide a lost count; nothing is changed.
	ErrUnderflow = errors.New("tenants: release of more than the tenant holds")
)
