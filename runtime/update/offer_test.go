package update_test

import (
	"context"
	"testing"

	"github.com/torpor-dev/torpor/runtime/update"
)

// TestOffer: with a rollout's offer the device fetches exactly the offered
// target, even when the owner signed a newer one; an offer of a target the
// owner did not sign, or with another version or SHA-256 than the signed
// target's, is refused (not-offered), as are the wrong hardware and an
// older version; the offered version already running is up to date.
func TestOffer(t *testing.T) {
	r := newRepo(t)
	two, three := payload(2, 50_000), payload(3, 60_000)
	r.publish("torpor-agent/2/linux-armv6", two, agentFor(2))
	r.publish("torpor-agent/3/linux-armv6", three, agentFor(3))
	r.publish("torpor-agent/4/linux-arm64", payload(4, 10), update.Custom{Version: 4, GOARCH: "arm64"})
	sum2 := r.targets.Signed.Targets["torpor-agent/2/linux-armv6"].Hashes["sha256"].String()
	offer := func(o update.Offer) func(*update.Config) {
		return func(c *update.Config) { o.Rollout = "r1"; c.Offer = &o }
	}
	res, err := r.device(1, offer(update.Offer{Target: "torpor-agent/2/linux-armv6", Version: "2", SHA256: sum2})).Check(context.Background())
	verified(t, res, err, two)
	if res.Target != "torpor-agent/2/linux-armv6" || res.Rollout != "r1" || res.Custom.Version != 2 {
		t.Errorf("offered 2: %+v", res)
	}
	for _, tc := range []struct {
		name  string
		o     update.Offer
		code  update.Code
		about string
	}{
		{"unsigned", update.Offer{Target: "torpor-agent/9/linux-armv6", Version: "9"}, update.Offered, "does not list"},
		{"version", update.Offer{Target: "torpor-agent/2/linux-armv6", Version: "3"}, update.Offered, `as version "3"; the owner signed version 2`},
		{"sha256", update.Offer{Target: "torpor-agent/2/linux-armv6", Version: "2", SHA256: "00" + sum2[2:]}, update.Offered, "the owner signed " + sum2},
		{"hardware", update.Offer{Target: "torpor-agent/4/linux-arm64", Version: "4"}, update.Hardware, "not board rpi-zero-w"},
	} {
		res, err := r.device(1, offer(tc.o)).Check(context.Background())
		refusal(t, err, tc.code, tc.about)
		if res.Target != tc.o.Target || res.Path != "" {
			t.Errorf("%s: result %+v; want the offered target named, no file", tc.name, res)
		}
	}
	_, err = r.device(3, offer(update.Offer{Target: "torpor-agent/2/linux-armv6", Version: "2"})).Check(context.Background())
	refusal(t, err, update.Rollback, "older than the installed 3")
	res, err = r.device(2, offer(update.Offer{Target: "torpor-agent/2/linux-armv6", Version: "2"})).Check(context.Background())
	if err != nil || !res.UpToDate || res.Path != "" {
		t.Errorf("offered the running version: %+v, %v; want up to date", res, err)
	}
}
