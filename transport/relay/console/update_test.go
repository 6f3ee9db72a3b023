package console

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/wake"
)

// TestUpdateInTheAPI: the outcome of a device's update check, from its
// signed status, is in the fleet API's device; absent for a device whose
// status has none.
func TestUpdateInTheAPI(t *testing.T) {
	s := newSite(t, "")
	dev := didtest.Key(t, 2)
	u := &wire.StatusUpdate{Outcome: wire.UpdateRefused, Target: "torpor-agent/3/linux-armv6", Version: 3, Reason: "freeze",
		Detail: "freeze: timestamp is older than the trusted one"}
	s.put(t, device{key: dev, name: "pi", mode: wake.Sleep, status: &wire.Status{Version: "1", Update: u}})
	d, err := s.src.One(context.Background(), dev.DID().String(), t0)
	if err != nil || d.Update == nil || *d.Update != *u {
		t.Fatalf("One = %+v, %v; want the status's update", d.Update, err)
	}
	tok, _ := bearer.IssuePurpose(s.op, s.origin, bearer.PurposeFleet, t0, time.Minute)
	a := s.do(t, "GET", "/fleet/api/devices/"+dev.DID().String(), map[string]string{"Authorization": "Bearer " + tok}, nil)
	var got operatorapi.Device
	if err := json.Unmarshal([]byte(a.body), &got); err != nil || got.Update == nil || got.Update.Reason != "freeze" {
		t.Errorf("API device: %d %s", a.status, a.body)
	}
	if d, err := s.src.One(context.Background(), s.dev.DID().String(), t0); err != nil || d.Update != nil {
		t.Errorf("a status without an update: %+v, %v", d.Update, err)
	}
	if !strings.Contains(a.body, `"update":{"outcome":"refused"`) {
		t.Errorf("API device's update member:\n%s", a.body)
	}
}
