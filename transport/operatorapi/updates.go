package operatorapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// UpdateAnswer is the relay's answer to an update upload.
type UpdateAnswer struct {
	// SHA256 is a blob's SHA-256 (lower-case hex), as the relay stored it.
	SHA256 string `json:"sha256,omitempty"`
	// Used is the bytes the repository holds after the upload.
	Used int64 `json:"used"`
}

// PutUpdate uploads body to the relay's update repository (PUT
// /operator/updates/{what}, what one of "root", "blob", "targets";
// docs/updates.md). A refusal is an error with the relay's reason.
func (c *Client) PutUpdate(ctx context.Context, what string, body []byte) (UpdateAnswer, error) {
	return c.putUpdate(ctx, "/operator/updates/"+what, body)
}

// PutTenantUpdate uploads body to the update repository of the tenant
// whose owner DID is tenant (PUT /operator/tenants/{tenant}/updates/{what};
// docs/tenants.md): c.Key must be one of the operators the owner named.
// Past the tenant's update_bytes quota the error is the relay's 507
// naming it.
func (c *Client) PutTenantUpdate(ctx context.Context, tenant, what string, body []byte) (UpdateAnswer, error) {
	return c.putUpdate(ctx, "/operator/tenants/"+url.PathEscape(tenant)+"/updates/"+what, body)
}

func (c *Client) putUpdate(ctx context.Context, path string, body []byte) (UpdateAnswer, error) {
	raw, err := c.call(ctx, http.MethodPut, path, "", body)
	if err != nil {
		return UpdateAnswer{}, err
	}
	var ans UpdateAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return UpdateAnswer{}, fmt.Errorf("relay's answer: %v", err)
	}
	return ans, nil
}

// RemoveAnswer is the relay's answer to a blob's removal.
type RemoveAnswer struct {
	// SHA256 is the blob removed.
	SHA256 string `json:"sha256"`
	// Removed is the bytes it held, given back to the tenant's
	// update_bytes quota.
	Removed int64 `json:"removed"`
	// UpdateBytes is the blob bytes the tenant's repository holds after
	// the removal.
	UpdateBytes int64 `json:"updateBytes"`
}

// RemoveTenantBlob removes the blob sha (its SHA-256 in lower-case hex)
// from the update repository of the tenant whose owner DID is tenant
// (DELETE /operator/tenants/{tenant}/updates/blob/{sha}; docs/tenants.md):
// c.Key must be one of the operators the owner named. A blob the current
// targets name is refused with the relay's 409 blob_named, one the
// repository does not hold with 404 no_blob.
func (c *Client) RemoveTenantBlob(ctx context.Context, tenant, sha string) (RemoveAnswer, error) {
	raw, err := c.call(ctx, http.MethodDelete, "/operator/tenants/"+url.PathEscape(tenant)+"/updates/blob/"+url.PathEscape(sha), "", nil)
	if err != nil {
		return RemoveAnswer{}, err
	}
	var ans RemoveAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return RemoveAnswer{}, fmt.Errorf("relay's answer: %v", err)
	}
	return ans, nil
}
