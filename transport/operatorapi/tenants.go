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

	"github.com/torpor-dev/torpor/transport/tenancy"
)

// Tenants fetches the relay's tenants with their quotas and totals (GET
// /operator/tenants, for the relay's own operators) as the relay sent
// them.
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
	path := "/operator/tenants/" + url.PathEscape(owner)
	tok, err := c.OperatorToken(http.MethodPut, path)
	if err != nil {
		return nil, err
	}
	status, raw, err := c.send(ctx, http.MethodPut, c.Origin+path, tok, body)
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

// Usage fetches a tenant's signed usage record of the hour that holds
// hour (GET /operator/tenants/{owner}/usage, docs/tenants.md) and returns
// it as the relay signed it, for tenancy.VerifyRecord.
func (c *Client) Usage(ctx context.Context, owner string, hour time.Time) ([]byte, error) {
	return c.get(ctx, "/operator/tenants/"+url.PathEscape(owner)+"/usage", "?hour="+url.QueryEscape(hour.UTC().Format(time.RFC3339)))
}

// get makes an operator GET of path with query and returns the body of
// a 200 answer.
func (c *Client) get(ctx context.Context, path, query string) ([]byte, error) {
	tok, err := c.OperatorToken(http.MethodGet, path)
	if err != nil {
		return nil, err
	}
	status, raw, err := c.do(ctx, http.MethodGet, c.Origin+path+query, tok)
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
