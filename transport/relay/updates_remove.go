package relay

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/updaterepo"
)

// operatorTenantBlobPath is a blob of a tenant's update repository, named
// by its SHA-256 in lower-case hex: DELETE removes it.
const operatorTenantBlobPath = "/operator/tenants/{did}/updates/blob/{sha256}"

// serveTenantBlobDelete is DELETE /operator/tenants/{did}/updates/blob/{sha256}
// (torporctl update remove): an operator the tenant's owner named removes
// a blob from the tenant's repository, and the tenant's update_bytes
// holdings go down by its bytes. The answers:
//
//	200 {"sha256", "removed": bytes freed, "updateBytes": blob bytes left}
//	409 blob_named      the current signed targets name the blob (as a
//	                    target or a delta): no device may be left with a
//	                    target it cannot download
//	409 host_repository the default tenant, which keeps the relay's own
//	                    repository: nothing is removed from that one
//	404 no_blob         the repository holds no such blob
//
// The removal holds the tenant's lock "updates <owner>", as its uploads
// do (updateRoom), so that on JetStream no upload of the same blob runs
// between the head's change and the purge of the blob's parts. Every
// answer past the operator checks is in the audit log (update-remove).
func (s *Relay) serveTenantBlobDelete(w http.ResponseWriter, r *http.Request) {
	caller, owner, _, repo, ok := s.tenantRepoOf(w, r)
	if !ok {
		return
	}
	sha := r.PathValue("sha256")
	if len(sha) != 64 {
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "no_blob", "message": "a blob is named by its SHA-256, 64 lower-case hex digits"})
		return
	}
	if s.isDefaultTenant(owner) {
		s.recordOperator(r, caller, "blob "+sha, "the default tenant keeps the relay's own repository")
		httpjson.Write(w, http.StatusConflict, map[string]any{"error": "host_repository",
			"message": "this tenant keeps the relay's own update repository, from which blobs are not removed (docs/tenants.md)"})
		return
	}
	unlock, err := s.cfg.Stores.Tenants.Lock(r.Context(), updatesLock(owner))
	if err != nil {
		s.storeFailed(w, err)
		return
	}
	n, err := repo.RemoveBlob(sha)
	if err == nil || errors.Is(err, updaterepo.ErrNotFound) {
		s.observeUpdateBytes(owner, repo)
	}
	unlock()
	if err != nil {
		s.refuseRemoval(w, r, caller, sha, err)
		return
	}
	s.recordOperator(r, caller, fmt.Sprintf("blob %s, %d bytes", sha, n), "")
	s.log.Info("update blob removed", "operator", caller.String(), "tenant", owner.String(), "sha256", sha, "bytes", n)
	ans := map[string]any{"sha256": sha, "removed": n}
	if left, err := repo.BlobBytes(); err == nil {
		ans["updateBytes"] = left
	}
	httpjson.Write(w, http.StatusOK, ans)
}

// refuseRemoval answers a removal the repository refused, and audits it.
func (s *Relay) refuseRemoval(w http.ResponseWriter, r *http.Request, caller did.DID, sha string, err error) {
	s.recordOperator(r, caller, "blob "+sha, err.Error())
	s.log.Warn("update blob removal refused", "operator", caller.String(), "tenant", r.PathValue("did"), "sha256", sha, "err", err)
	switch {
	case errors.Is(err, updaterepo.ErrNamed):
		httpjson.Write(w, http.StatusConflict, map[string]any{"error": "blob_named", "message": err.Error()})
	case errors.Is(err, updaterepo.ErrNotFound):
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "no_blob", "message": err.Error()})
	default:
		s.storeFailed(w, err)
	}
}
