package relay

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/link/server"
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

// linkUpdates is u for the link server: a nil interface when there is
// none, so that the server answers wire.CodeNoUpdates.
func linkUpdates(u UpdateRepo) server.Updates {
	if u == nil {
		return nil
	}
	return u
}

// MaxUpdateUpload bounds one upload to the update endpoints.
const MaxUpdateUpload = 64 << 20

// The operator's update endpoints (docs/updates.md, "Publishing"):
//
//	PUT /operator/updates/root      the owner's root.json (first, or the next version)
//	PUT /operator/updates/blob      a target's bytes; answers their sha256
//	PUT /operator/updates/targets   the owner's signed targets.json
//
// Each needs an operator's token, as the queue endpoints do. The relay
// checks what it is given (store/updaterepo) and answers 400 with the
// reason when it refuses, 507 when the repository's byte bound is reached.
const operatorUpdatesPath = "/operator/updates/{what}"

func (s *Relay) serveUpdatePut(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.operator(w, r)
	if !ok {
		return
	}
	repo := s.cfg.Stores.Updates
	if repo == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no_updates", "message": "this relay hosts no update repository (--update-snapshot-key and --update-timestamp-key)"})
		return
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, MaxUpdateUpload), r.ContentLength)
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": "too_large", "message": err.Error()})
		return
	}
	ans := map[string]any{}
	switch r.PathValue("what") {
	case "root":
		err = repo.SetRoot(body)
	case "blob":
		var sum string
		sum, err = repo.AddBlob(body)
		ans["sha256"] = sum
	case "targets":
		err = repo.Publish(body)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "unknown_update_file", "message": "root, blob or targets"})
		return
	}
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, updaterepo.ErrFull) {
			status = http.StatusInsufficientStorage
		}
		s.log.Warn("update upload refused", "what", r.PathValue("what"), "operator", caller.String(), "err", err)
		s.recordOperator(r, caller, r.PathValue("what"), err.Error())
		writeJSON(w, status, map[string]any{"error": "update_refused", "message": err.Error()})
		return
	}
	s.recordOperator(r, caller, fmt.Sprintf("%s, %d bytes", r.PathValue("what"), len(body)), "")
	if used, err := repo.Used(); err == nil {
		ans["used"] = used
	}
	s.log.Info("update upload", "what", r.PathValue("what"), "operator", caller.String(), "bytes", len(body))
	writeJSON(w, http.StatusOK, ans)
}

// refreshUpdates re-signs the repository's timestamp and snapshot when
// due (Run calls it every PurgeInterval).
func (s *Relay) refreshUpdates() {
	if s.cfg.Stores.Updates == nil {
		return
	}
	signed, err := s.cfg.Stores.Updates.Refresh()
	switch {
	case err != nil && !errors.Is(err, updaterepo.ErrNothingPublished):
		s.log.Error("update repository: refresh", "err", err)
	case signed:
		s.log.Info("update repository: timestamp re-signed")
	}
}
