// Package tenancy is what a hosted relay's tenants, their owners and the
// relay's operators exchange: the quotas and the refusal that names one
// (QuotaError), the owner's signed operator list (OperatorList) and the
// relay's signed hourly usage record (Record), which a tenant verifies
// offline (VerifyRecord, torporctl tenant usage --verify). The relay
// keeps its tenants in store/tenants; docs/tenants.md describes the model.
package tenancy

import (
	"fmt"
	"math"
	"net/http"

	"github.com/torpor-dev/torpor/did"
)

// Quota names one of a tenant's quotas; it is the name a refusal carries.
type Quota string

// The quotas.
const (
	// QuotaDevices bounds the devices enrolled in the tenant.
	QuotaDevices Quota = "devices"
	// QuotaQueuedBytes bounds the bytes queued for the tenant's sleeping
	// devices, all of them together.
	QuotaQueuedBytes Quota = "queued_bytes"
	// QuotaKeyPackageBytes bounds the KeyPackages the tenant's devices
	// keep on the relay.
	QuotaKeyPackageBytes Quota = "keypackage_bytes"
	// QuotaRequests bounds the requests per second of the tenant's
	// senders.
	QuotaRequests Quota = "requests_per_second"
	// QuotaUpdateBytes bounds the bytes of the blobs (targets' contents)
	// the tenant's update repository holds on the relay.
	QuotaUpdateBytes Quota = "update_bytes"
	// QuotaByteHours bounds the byte-hours the tenant's queued bytes are
	// held in one period (the calendar month of the relay's clock, in
	// UTC): reached, no more is queued until the next period.
	QuotaByteHours Quota = "byte_hours"
)

// MaxByteHours is the largest byte_hours quota: the ledgers count
// byte-time in byte-milliseconds in an int64.
const MaxByteHours = math.MaxInt64 / 3_600_000

// Quotas are a tenant's limits; zero is no limit.
type Quotas struct {
	Devices           int64 `json:"devices,omitempty"`
	QueuedBytes       int64 `json:"queuedBytes,omitempty"`
	KeyPackageBytes   int64 `json:"keyPackageBytes,omitempty"`
	RequestsPerSecond int64 `json:"requestsPerSecond,omitempty"`
	UpdateBytes       int64 `json:"updateBytes,omitempty"`
	// ByteHours is in byte-hours per calendar month (QuotaByteHours).
	ByteHours int64 `json:"byteHours,omitempty"`
}

// Limit returns q's limit for quota.
func (q Quotas) Limit(quota Quota) int64 {
	switch quota {
	case QuotaDevices:
		return q.Devices
	case QuotaQueuedBytes:
		return q.QueuedBytes
	case QuotaKeyPackageBytes:
		return q.KeyPackageBytes
	case QuotaRequests:
		return q.RequestsPerSecond
	case QuotaUpdateBytes:
		return q.UpdateBytes
	case QuotaByteHours:
		return q.ByteHours
	}
	return 0
}

// Check reports the first negative quota.
func (q Quotas) Check() error {
	for _, x := range []Quota{QuotaDevices, QuotaQueuedBytes, QuotaKeyPackageBytes, QuotaRequests, QuotaUpdateBytes, QuotaByteHours} {
		if q.Limit(x) < 0 {
			return fmt.Errorf("tenants: quota %s is negative (%d); zero means no limit", x, q.Limit(x))
		}
	}
	if q.ByteHours > MaxByteHours {
		return fmt.Errorf("tenants: quota %s is more than %d", QuotaByteHours, int64(MaxByteHours))
	}
	return nil
}

// QuotaError is a refusal because a tenant's quota is reached: nothing of
// the request was kept.
type QuotaError struct {
	Tenant did.DID
	Quota  Quota
	// Limit is the quota, Used what the tenant held before the request,
	// Want what the request asked for. For byte_hours, Limit and Used are
	// byte-hours (Used the month's so far, rounded down) and Want the
	// request's bytes.
	Limit, Used, Want int64
}

func (e *QuotaError) Error() string {
	switch e.Quota {
	case QuotaRequests:
		return fmt.Sprintf("tenant %s is over its quota of %d requests per second", e.Tenant, e.Limit)
	case QuotaByteHours:
		return fmt.Sprintf("tenant %s quota byte_hours reached: %d of %d byte-hours held this month", e.Tenant, e.Used, e.Limit)
	}
	return fmt.Sprintf("tenant %s quota %s reached: %d of %d used, %d more asked", e.Tenant, e.Quota, e.Used, e.Limit, e.Want)
}

// Status is the HTTP status of the refusal: 429 for the request rate,
// 507 for what the tenant stores.
func (e *QuotaError) Status() int {
	if e.Quota == QuotaRequests {
		return http.StatusTooManyRequests
	}
	return http.StatusInsufficientStorage
}
