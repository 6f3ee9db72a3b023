package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/link/server"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// A hosted relay keeps an update repository per tenant beside its own
// (docs/tenants.md, "Update repositories"): the tenant's operators fill
// it with the owner's signed metadata and the targets' blobs, within the
// tenant's update_bytes quota, and the tenant's devices read it and no
// other. The default tenant, whose owner is one of the relay's own
// owners (Access.Owners: a single-owner relay that became a hosted one),
// keeps the relay's own repository, so that nothing its devices read
// moves.

// operatorTenantUpdatesPath is a tenant's repository's uploads, as
// operatorUpdatesPath is the relay's own: root, blob or targets.
const operatorTenantUpdatesPath = "/operator/tenants/{did}/updates/{what}"

// tenantRepo is a tenant's update repository as the relay uses it
// (store/updaterepo's Repo).
type tenantRepo interface {
	UpdateRepo
	// BlobBytes is what the tenant's update_bytes quota bounds.
	BlobBytes() (int64, error)
	// Holds reports whether a blob is held already (an upload of it
	// again takes no room).
	Holds(sha string) (bool, error)
	// RemoveBlob removes a blob the current targets do not name
	// (updaterepo.ErrNamed otherwise) and returns its bytes.
	RemoveBlob(sha string) (int64, error)
}

// tenantRepos is an UpdateRepo that keeps a repository per tenant beside
// its own (store/updaterepo's Repo.Tenant).
type tenantRepos interface {
	Tenant(owner string) (*updaterepo.Repo, error)
}

// isDefaultTenant reports whether owner's tenant keeps the relay's own
// update repository: owner is one of the relay's --owner DIDs.
func (s *Relay) isDefaultTenant(owner did.DID) bool {
	return slices.Contains(s.cfg.Access.Owners, owner)
}

// tenantUpdates returns owner's update repository: the relay's own for
// the default tenant, else the tenant's; nil when the relay hosts none.
func (s *Relay) tenantUpdates(owner did.DID) (tenantRepo, error) {
	host := s.cfg.Stores.Updates
	if host == nil {
		return nil, nil
	}
	if s.isDefaultTenant(owner) {
		r, ok := host.(tenantRepo)
		if !ok {
			return nil, fmt.Errorf("%w: the relay's repository counts no blob bytes", errRoomStore)
		}
		return r, nil
	}
	tr, ok := host.(tenantRepos)
	if !ok {
		return nil, updaterepo.ErrNoPartitions
	}
	r, err := tr.Tenant(owner.String())
	if err != nil {
		return nil, err
	}
	return r, nil
}

// serveTenantUpdatePut is PUT /operator/tenants/{did}/updates/{what}: an
// upload to the tenant {did}'s repository, by an operator its owner
// named (the relay's own operators only if the owner named them). A blob
// past the tenant's update_bytes quota is refused 507 tenant_quota.
func (s *Relay) serveTenantUpdatePut(w http.ResponseWriter, r *http.Request) {
	caller, owner, info, repo, ok := s.tenantRepoOf(w, r)
	if !ok {
		return
	}
	s.putUpdate(w, r, caller, repo, s.updateRoom(owner, repo, info.Quotas.UpdateBytes > 0))
}

// tenantRepoOf is the first part of every request to the repository of
// the tenant {did}: the caller's operator token, the tenant, the caller
// among the operators its owner named (else 403 not_tenant_operator,
// audited: tenantOperator) and the tenant's repository. ok false when it
// answered.
func (s *Relay) tenantRepoOf(w http.ResponseWriter, r *http.Request) (caller, owner did.DID, info tenants.Info, repo tenantRepo, ok bool) {
	if caller, ok = s.operator(w, r); !ok {
		return
	}
	if info, ok = s.tenantOperator(w, r, caller, r.PathValue("what")); !ok {
		return
	}
	ok = false
	owner = info.Owner
	repo, err := s.tenantUpdates(owner)
	switch {
	case err != nil:
		s.storeFailed(w, err)
	case repo == nil:
		noUpdates(w)
	default:
		ok = true
	}
	return
}

// updateRoom takes owner's lock "updates <owner>" (tenants.Store.Lock:
// one relay's mutex on bbolt, a key of the shared bucket on JetStream)
// for a blob's upload, held until the blob is stored: a tenant's
// uploads and removals (serveTenantBlobDelete) run one at a time, through
// one relay or several. With quota, it checks that the blob fits owner's
// update_bytes quota, counting the blob bytes the repository holds now
// under that lock, as tenantQueueRoom does for queued bytes: of uploads
// racing for the last room, one is taken. A blob the repository holds
// already takes no room and is not counted. Once the blob is stored the
// tenant's update bytes are observed for its usage (observeUpdateBytes).
func (s *Relay) updateRoom(owner did.DID, repo tenantRepo, quota bool) blobRoom {
	return func(ctx context.Context, sha string, n int64) (func(), error) {
		l := s.cfg.Stores.Tenants
		unlock, err := l.Lock(ctx, updatesLock(owner))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errRoomStore, err)
		}
		done := func() {
			s.observeUpdateBytes(owner, repo)
			unlock()
		}
		if !quota {
			return done, nil
		}
		held, err := repo.Holds(sha)
		var used int64
		if err == nil && !held {
			used, err = repo.BlobBytes()
		}
		if err != nil {
			unlock()
			return nil, fmt.Errorf("%w: %w", errRoomStore, err)
		}
		if held {
			return done, nil
		}
		if err := l.Check(owner, tenancy.QuotaUpdateBytes, used, n); err != nil {
			unlock()
			var qe *tenancy.QuotaError
			if !errors.As(err, &qe) {
				err = fmt.Errorf("%w: %w", errRoomStore, err)
			}
			return nil, err
		}
		return done, nil
	}
}

// updatesLock is the name of the lock a tenant's uploads and removals
// hold.
func updatesLock(owner did.DID) string { return "updates " + owner.String() }

// observeUpdateBytes records the blob bytes owner's repository holds now
// in the tenant's usage (tenants.Store.Observe: the hour's peak), after
// an upload or a removal; SampleTenants does it too every few seconds.
// A failure is logged: the usage is not the quota, which is counted at
// each upload.
func (s *Relay) observeUpdateBytes(owner did.DID, repo tenantRepo) {
	n, err := repo.BlobBytes()
	if err == nil {
		err = s.cfg.Stores.Tenants.Observe(owner, tenancy.QuotaUpdateBytes, n)
	}
	if err != nil {
		s.log.Warn("update repository: recording the tenant's update bytes", "tenant", owner.String(), "err", err)
	}
}

// deviceUpdates is the relay's repository as the link server reads it
// with tenants: each device reads its own tenant's (For); a device in no
// tenant, or in the default one, reads the relay's own.
type deviceUpdates struct {
	UpdateRepo
	s *Relay
}

// For implements server.UpdatesOf.
func (d deviceUpdates) For(agent did.DID) (server.Updates, error) {
	owner, in, err := d.s.cfg.Stores.Tenants.TenantOf(agent)
	if err != nil {
		return nil, err
	}
	if !in {
		return d.UpdateRepo, nil
	}
	r, err := d.s.tenantUpdates(owner)
	if err != nil || r == nil {
		return nil, err
	}
	return r, nil
}

// refreshTenantUpdates re-signs each tenant's repository's timestamp and
// snapshot when due, as refreshUpdates does the relay's own.
func (s *Relay) refreshTenantUpdates() {
	if s.cfg.Stores.Tenants == nil || s.cfg.Stores.Updates == nil {
		return
	}
	ts, err := s.cfg.Stores.Tenants.Tenants()
	if err != nil {
		s.log.Error("update repositories: listing the tenants", "err", err)
		return
	}
	for _, t := range ts {
		if s.isDefaultTenant(t.Owner) {
			continue
		}
		repo, err := s.tenantUpdates(t.Owner)
		if err != nil {
			s.log.Error("update repository: a tenant's", "tenant", t.Owner.String(), "err", err)
			continue
		}
		signed, err := repo.Refresh()
		switch {
		case err != nil && !errors.Is(err, updaterepo.ErrNothingPublished):
			s.log.Error("update repository: refresh", "tenant", t.Owner.String(), "err", err)
		case signed:
			s.log.Info("update repository: timestamp re-signed", "tenant", t.Owner.String())
		}
	}
}
