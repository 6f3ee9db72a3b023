//go:build integration

package rollout

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// fleet is an operator's key file and n devices that published an hourly
// mode to the relay at url.
type fleet struct {
	opKey string
	op    *did.PrivateKey
	devs  []*did.PrivateKey
}

func newFleet(t *testing.T) *fleet {
	op := didtest.New(t)
	f := &fleet{op: op, opKey: testenv.KeyFile(t, op)}
	for range 4 {
		f.devs = append(f.devs, didtest.New(t))
	}
	return f
}

// relayFlags are the flags of every relay of the tests: f's operator, and
// devices admitted at once.
func (f *fleet) relayFlags(extra ...string) []string {
	return append([]string{"--operator", f.op.DID().String(), "--admission", "open"}, extra...)
}

// ctl runs the torporctl binary's update rollout against url as the
// operator and returns its output; it fails the test on an exit status
// other than want.
func (f *fleet) ctl(t *testing.T, url string, want int, args ...string) string {
	t.Helper()
	args = append([]string{"update", "rollout", "--relay", url, "--key", f.opKey}, args...)
	out, err := exec.Command(testenv.Binary(t, "torporctl"), args...).CombinedOutput()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != want {
		t.Fatalf("torporctl %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
	}
	return string(out)
}

// status is torporctl update rollout status ID --json.
func (f *fleet) status(t *testing.T, url, id string) operatorapi.Rollout {
	t.Helper()
	var r operatorapi.Rollout
	out := f.ctl(t, url, 0, "--json", "status", id)
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("torporctl status --json: %v\n%s", err, out)
	}
	return r
}

// wake links dev to the relay at url as its device does at a wake: it
// publishes its state, with a signed status reporting outcome of version
// when outcome is set, and returns the offer of the state-ok.
func wake(t *testing.T, url string, dev *did.PrivateKey, outcome, version string) *wire.Offer {
	t.Helper()
	st := wire.State{Mode: "hourly_wake"}
	if outcome != "" {
		in := &wire.StatusInstall{Result: outcome, Version: version, From: "1.3.0", Reason: "trial boot: exited with status 2", At: time.Now()}
		o, err := governed.Sign(dev, governed.Template{IssuedAt: time.Now(), Semantic: governed.Semantic{Schema: wire.StatusSchema},
			Purpose: wire.PurposeStatus, Payload: wire.Status{Version: "1.3.0", Install: in}})
		if err != nil {
			t.Fatal(err)
		}
		if st.Status, err = o.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	}
	c, ctx := relaytest.Dial(t, url, dev)
	defer c.Close()
	a, err := c.Publish(ctx, st)
	if err != nil {
		t.Fatalf("%s's state: %v", dev.DID(), err)
	}
	return a.Offer
}
