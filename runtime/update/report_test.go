package update_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestStatusSaysWhy: each outcome of a check becomes the status's update
// member, which the relay's parser accepts: a freeze with its code and
// sentence, a verified target with its version, an install that waits for
// a trial (no refusal), and a long detail cut to the status's bound.
func TestStatusSaysWhy(t *testing.T) {
	r := newRepo(t)
	r.publish("agent", payload(2, 10), agentFor(2))
	c := r.device(1)
	res, err := c.Check(context.Background())
	if s := update.Status(res, err); s.Outcome != wire.UpdateVerified || s.Version != 2 || s.Target != "agent" || s.Bytes != 10 {
		t.Errorf("verified: %+v", s)
	}
	old := r.files["timestamp.json"]
	r.publish("agent-3", payload(3, 10), agentFor(3))
	if _, err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.files["timestamp.json"] = old
	res, err = c.Check(context.Background())
	s := update.Status(res, err)
	b, _ := json.Marshal(wire.Status{Version: "1", Update: s})
	got, perr := wire.ParseStatus(b)
	if perr != nil || got.Update.Outcome != wire.UpdateRefused || got.Update.Reason != "freeze" || !strings.Contains(got.Update.Detail, "older than the trusted one") {
		t.Errorf("freeze in the status: %+v, %v", got.Update, perr)
	}
	wait := update.Status(update.Result{Target: "agent-3"}, &update.Refusal{Code: update.Trial, Detail: "installing agent-3 waits for the trial of the running build to end"})
	if wait.Outcome != wire.UpdateWaiting || wait.Reason != "trial" || wait.Detail != "installing agent-3 waits for the trial of the running build to end" {
		t.Errorf("an install waiting for a trial: %+v; want outcome waiting, reason trial", wait)
	}
	long := update.Status(update.Result{}, &update.Refusal{Code: update.Fetch, Detail: strings.Repeat("é", 400)})
	if len(long.Detail) > wire.MaxStatusUpdateDetail || !strings.HasPrefix(long.Detail, "fetch: é") {
		t.Errorf("a long detail: %d bytes", len(long.Detail))
	}
}
