package console

import (
	"context"
	"net/http"

	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// Rollouts is the relay's update rollouts as the console shows them
// (docs/updates.md, "Rollouts"); transport/relay implements it over its
// rollouts store.
type Rollouts interface {
	// Rollouts returns every rollout.
	Rollouts(ctx context.Context) ([]operatorapi.Rollout, error)
	// DeviceUpdates returns the rollouts that offered device a target,
	// with what it reported, newest rollout first.
	DeviceUpdates(ctx context.Context, device string) ([]operatorapi.DeviceUpdate, error)
}

// noRollouts answers a request for the rollouts of a relay that keeps
// none.
func (c *Console) noRollouts(w http.ResponseWriter) bool {
	if c.cfg.Rollouts != nil {
		return false
	}
	httpjson.Write(w, http.StatusNotFound, map[string]string{"error": "no_rollouts", "message": "this relay keeps no rollouts"})
	return true
}

// hostRollouts reads the rollouts for a request of the relay's own
// operators; it answers w itself and returns false when the relay keeps
// no rollouts, the request is not the host's, or the read fails.
func (c *Console) hostRollouts(w http.ResponseWriter, r *http.Request) ([]operatorapi.Rollout, bool) {
	if c.noRollouts(w) || c.notHost(w, r, "the rollouts") {
		return nil, false
	}
	rs, err := c.cfg.Rollouts.Rollouts(r.Context())
	if err != nil {
		c.internal(w, err)
		return nil, false
	}
	return rs, true
}

// serveAPIRollouts is GET /fleet/api/rollouts: the rollouts as
// torporctl update rollout status --json prints them.
func (c *Console) serveAPIRollouts(w http.ResponseWriter, r *http.Request) {
	rs, ok := c.hostRollouts(w, r)
	if !ok {
		return
	}
	httpjson.Write(w, http.StatusOK, operatorapi.RolloutList{Rollouts: append([]operatorapi.Rollout{}, rs...)})
}

// serveRollouts is the rollouts' page: each rollout's state, its waves
// (installed, failed, pending, waiting) and its latest failures. Like the
// audit log, it is the relay's own operators' (notHost): a tenant's
// operator sees no rollout.
func (c *Console) serveRollouts(w http.ResponseWriter, r *http.Request, op string) {
	rs, ok := c.hostRollouts(w, r)
	if !ok {
		return
	}
	c.render(w, http.StatusOK, "rollouts.html", view{Title: "Rollouts", Operator: op, Host: true, Rollouts: rs, HasRollouts: true})
}

// deviceUpdates are the rollouts that offered device a target; none when
// the relay keeps no rollouts, or (logged) when they cannot be read: the
// device's page shows the rest.
func (c *Console) deviceUpdates(ctx context.Context, device string) []operatorapi.DeviceUpdate {
	if c.cfg.Rollouts == nil {
		return nil
	}
	u, err := c.cfg.Rollouts.DeviceUpdates(ctx, device)
	if err != nil {
		c.log.Error("fleet console: reading a device's rollouts", "agent", device, "err", err)
	}
	return u
}
