package relay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/link/server"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// UpdateRepo is the relay's TUF repository for agent updates
// (store/updaterepo's Repo; docs/updates.md): devices read it over their
// link (server.Updates), operators fill it with the owner's signed
// metadata and the targets' blobs, and the relay re-signs its timestamp
// and snapshot before they expire.
type UpdateRepo interface {
	server.Updates
	SetRoot(b []byte) error
	AddBlob(data []byte) (string, error)
	Publish(targets []byte) error
	Refresh() (bool, error)
	Used() (int64, error)
}

// linkUpdates is what the link server reads devices' updates from: a
// nil interface when the relay hosts no repository, so that the server
// answers wire.CodeNoUpdates; with tenants, each device's tenant's
// (deviceUpdates).
func (s *Relay) linkUpdates() server.Updates {
	u := s.cfg.Stores.Updates
	switch {
	case u == nil:
		return nil
	case s.cfg.Stores.Tenants == nil:
		return u
	}
	return deviceUpdates{UpdateRepo: u, s: s}
}

// MaxUpdateUpload bounds one upload to the update endpoints.
const MaxUpdateUpload = 64 << 20

// The operator's update endpoints (docs/updates.md, "Publishing"):
//
//	PUT /operator/updates/root      the owner's root.json (first, or the next version)
//	PUT /operator/updates/blob      a target's bytes; answers their sha256
//	PUT /operator/updates/targets   the owner's signed targets.json
//
// Each needs a token of one of the relay's own operators, as the queue
// endpoints do; a tenant's repository has the same three under
// /operator/tenants/{did}/updates/ (serveTenantUpdatePut). The relay
// checks what it is given (store/updaterepo) and answers 400 with the
// reason when it refuses, 507 when the repository's byte bound is
// reached.
const operatorUpdatesPath = "/operator/updates/{what}"

func (s *Relay) serveUpdatePut(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.operator(w, r)
	if !ok {
		return
	}
	if !s.operators[caller.String()] {
		s.recordOperator(r, caller, r.PathValue("what"), "a tenant's operator on the relay's own repository")
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "not_operator",
			"message": "the relay's update repository is its own operators'; a tenant's operators upload to their tenant's (torporctl update publish --tenant, docs/tenants.md)"})
		return
	}
	repo := s.cfg.Stores.Updates
	if repo == nil {
		noUpdates(w)
		return
	}
	s.putUpdate(w, r, caller, repo, nil)
}

func noUpdates(w http.ResponseWriter) {
	httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "no_updates", "message": "this relay hosts no update repository (--update-snapshot-key and --update-timestamp-key)"})
}

// putUpdate takes one upload into repo and answers it. room, when set,
// is called for a blob before it is stored (see blobRoom).
func (s *Relay) putUpdate(w http.ResponseWriter, r *http.Request, caller did.DID, repo UpdateRepo, room blobRoom) {
	body, err := readAll(http.MaxBytesReader(w, r.Body, MaxUpdateUpload), r.ContentLength)
	if err != nil {
		httpjson.Write(w, http.StatusRequestEntityTooLarge, map[string]any{"error": "too_large", "message": err.Error()})
		return
	}
	what := r.PathValue("what")
	ans := map[string]any{}
	switch what {
	case "root":
		err = repo.SetRoot(body)
	case "blob":
		var sum string
		sum, err = putBlob(r.Context(), repo, room, body)
		ans["sha256"] = sum
	case "targets":
		err = repo.Publish(body)
	default:
		httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "unknown_update_file", "message": "root, blob or targets"})
		return
	}
	if err != nil {
		s.refuseUpdate(w, r, caller, err)
		return
	}
	s.recordOperator(r, caller, fmt.Sprintf("%s, %d bytes", what, len(body)), "")
	if used, err := repo.Used(); err == nil {
		ans["used"] = used
	}
	s.log.Info("update upload", "what", what, "operator", caller.String(), "bytes", len(body), "tenant", r.PathValue("did"))
	httpjson.Write(w, http.StatusOK, ans)
}

// refuseUpdate answers an upload the repository or a quota refused: 507
// tenant_quota naming the quota past a tenant's (tenancy.QuotaError), 507
// update_refused past the repository's byte bound, 503 when a store
// failed, else 400 update_refused with the reason.
func (s *Relay) refuseUpdate(w http.ResponseWriter, r *http.Request, caller did.DID, err error) {
	what := r.PathValue("what")
	s.log.Warn("update upload refused", "what", what, "operator", caller.String(), "tenant", r.PathValue("did"), "err", err)
	s.recordOperator(r, caller, what, err.Error())
	var qe *tenancy.QuotaError
	switch {
	case errors.As(err, &qe):
		s.metrics.tenantRefusal(qe.Tenant, string(qe.Quota))
		httpjson.Write(w, qe.Status(), map[string]any{"error": tokenTenantQuota, "kind": string(qe.Quota), "tenant": qe.Tenant.String(), "message": qe.Error()})
	case errors.Is(err, errRoomStore):
		s.storeFailed(w, err)
	case errors.Is(err, updaterepo.ErrFull):
		httpjson.Write(w, http.StatusInsufficientStorage, map[string]any{"error": "update_refused", "message": err.Error()})
	default:
		httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": "update_refused", "message": err.Error()})
	}
}

// blobRoom checks that a blob (its SHA-256 in hex, its length n) fits
// before it is stored; unlock is called once it is stored or refused. Its
// refusal is a *tenancy.QuotaError, a store's failure wraps errRoomStore.
type blobRoom func(ctx context.Context, sha string, n int64) (unlock func(), err error)

// errRoomStore is wrapped by a blobRoom's error when a store failed.
var errRoomStore = errors.New("relay: counting the update repository failed")

// putBlob stores body in repo after room, if any, let it.
func putBlob(ctx context.Context, repo UpdateRepo, room blobRoom, body []byte) (string, error) {
	if room != nil {
		sum := sha256.Sum256(body)
		unlock, err := room(ctx, hex.EncodeToString(sum[:]), int64(len(body)))
		if err != nil {
			return "", err
		}
		defer unlock()
	}
	return repo.AddBlob(body)
}

// refreshUpdates re-signs the repository's timestamp and snapshot when
// due (Run calls it every PurgeInterval).
func (s *Relay) refreshUpdates() {
	if s.cfg.Stores.Updates == nil {
		return
	}
	defer s.refreshTenantUpdates()
	signed, err := s.cfg.Stores.Updates.Refresh()
	switch {
	case err != nil && !errors.Is(err, updaterepo.ErrNothingPublished):
		s.log.Error("update repository: refresh", "err", err)
	case signed:
		s.log.Info("update repository: timestamp re-signed")
	}
}
