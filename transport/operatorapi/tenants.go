package operatorapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// Tenants fetches the relay's tenants with their quotas and totals (GET
// /operator/tenants, for the relay's own operators: a TenantList) as the
// relay sent them.
func (c *Client) Tenants(ctx context.Context) ([]byte, error) {
	return c.get(ctx, "/operator/tenants", "")
}

// TenantPut is the body of PUT /operator/tenants/{owner}: the quotas the
// host sets for the owner's tenant, as in the relay's --tenants file.
type TenantPut struct {
	Quotas tenancy.Quotas `json:"quotas"`
}

// PutTenant makes owner a tenant of the relay with quotas q, or sets the
// quotas of its tenant (PUT /operator/tenants/{owner}, for the relay's own
// operators), and returns the tenant's line of the host's list as the
// relay sent it.
func (c *Client) PutTenant(ctx context.Context, owner string, q tenancy.Quotas) ([]byte, error) {
	body, err := json.Marshal(TenantPut{Quotas: q})
	if err != nil {
		return nil, err
	}
	return c.call(ctx, http.MethodPut, "/operator/tenants/"+url.PathEscape(owner), "", body)
}

// TenantList is a hosted relay's tenants as its own operators (the host)
// see them: GET /operator/tenants and the fleet console's
// /fleet/api/tenants answer it, one line per tenant with its quotas and
// totals and never a device (docs/tenants.md).
type TenantList struct {
	Now     time.Time `json:"now"`
	Tenants []Tenant  `json:"tenants"`
	// Total sums every tenant's line; its Owner is empty and its Quotas
	// zero.
	Total Tenant `json:"total"`
	// NoTenant counts by state the devices in no tenant: the host's own,
	// which its fleet page shows.
	NoTenant Summary `json:"noTenant"`
}

// Tenant is one tenant's line of a TenantList. Zero quotas are no
// limit.
type Tenant struct {
	Owner  string         `json:"owner"`
	Quotas tenancy.Quotas `json:"quotas"`
	// Devices counts the devices enrolled in the tenant; States counts
	// those that published a state by their state, as the fleet's
	// summary does.
	Devices int     `json:"devices"`
	States  Summary `json:"states"`
	// QueuedBytes are the live bytes queued for the tenant's devices,
	// KeyPackageBytes the KeyPackages (pools and last-resort ones) they
	// keep on the relay, UpdateBytes the blobs of the tenant's update
	// repository (the relay's own for a default tenant).
	QueuedBytes     int64 `json:"queuedBytes"`
	KeyPackageBytes int64 `json:"keyPackageBytes"`
	UpdateBytes     int64 `json:"updateBytes"`
	// Operators counts the operators the owner's list names;
	// HostSeesDevices is that list's permission for the host to see the
	// tenant's devices.
	Operators       int  `json:"operators"`
	HostSeesDevices bool `json:"hostSeesDevices"`
	// ByteHoursPeriod is the start of the byte_hours quota's period (the
	// calendar month, UTC) and MilliByteHours the byte-hours the tenant's
	// queued bytes were held in it up to now, in thousandths.
	ByteHoursPeriod time.Time `json:"byteHoursPeriod"`
	MilliByteHours  int64     `json:"milliByteHours"`
}

// Add adds o's counts to t's (not its owner, quotas or permission).
func (t *Tenant) Add(o Tenant) {
	t.Devices += o.Devices
	t.States = t.States.Plus(o.States)
	t.QueuedBytes += o.QueuedBytes
	t.KeyPackageBytes += o.KeyPackageBytes
	t.UpdateBytes += o.UpdateBytes
	t.Operators += o.Operators
	t.MilliByteHours += o.MilliByteHours
}

// FleetTenants fetches the relay's tenants from its fleet console
// (GET /fleet/api/tenants, with an API token as FleetQuery sends; for the
// relay's own operators) and returns them with the JSON as the relay
// sent it.
func (c *Client) FleetTenants(ctx context.Context) (TenantList, []byte, error) {
	tok, err := bearer.IssuePurpose(c.Key, c.Origin, bearer.PurposeFleet, clock.Or(c.Clock).Now(), time.Minute)
	if err != nil {
		return TenantList{}, nil, err
	}
	u := c.Origin + "/fleet/api/tenants"
	status, body, err := c.do(ctx, http.MethodGet, u, tok)
	if err != nil {
		return TenantList{}, nil, err
	}
	var l TenantList
	if status != http.StatusOK {
		var e struct{ Message string }
		json.Unmarshal(body, &e)
		return l, nil, fmt.Errorf("%s: HTTP %d: %s", u, status, e.Message)
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return l, nil, fmt.Errorf("%s: %v", u, err)
	}
	return l, body, nil
}

// Usage fetches a tenant's signed usage record of the hour that holds
// hour (GET /operator/tenants/{owner}/usage, docs/tenants.md) and returns
// it as the relay signed it, for tenancy.VerifyRecord.
func (c *Client) Usage(ctx context.Context, owner string, hour time.Time) ([]byte, error) {
	return c.get(ctx, "/operator/tenants/"+url.PathEscape(owner)+"/usage", "?hour="+url.QueryEscape(hour.UTC().Format(time.RFC3339)))
}

// get makes an operator GET of path with query and returns the body of
// a 200 answer.
func (c *Client) get(ctx context.Context, path, query string) ([]byte, error) {
	return c.call(ctx, http.MethodGet, path, query, nil)
}

// call makes an operator request of method on path with query and body
// (none when nil) and returns the body of a 200 answer; another answer is
// an error with the relay's reason.
func (c *Client) call(ctx context.Context, method, path, query string, body []byte) ([]byte, error) {
	tok, err := c.OperatorToken(method, path)
	if err != nil {
		return nil, err
	}
	status, raw, err := c.send(ctx, method, c.Origin+path+query, tok, body)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		var ans QueueAnswer // the same error members
		json.Unmarshal(raw, &ans)
		return nil, fmt.Errorf("relay answered %d %s: %s", status, http.StatusText(status), ans.reason(raw))
	}
	return raw, nil
}

// PutOperatorList uploads an owner's signed operator list to the relay at
// origin (PUT /tenants/operators). The owner's signature is its
// authority: it takes no token. hc nil means http.DefaultClient.
func PutOperatorList(ctx context.Context, hc *http.Client, origin string, list []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, origin+"/tenants/operators", bytes.NewReader(list))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var ans QueueAnswer
		json.Unmarshal(raw, &ans)
		return fmt.Errorf("relay answered %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), ans.reason(raw))
	}
	return nil
}
