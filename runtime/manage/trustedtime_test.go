package manage

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
)

// TestStatusNamesTheTrustedTime: the status command's last wake says how
// the wake established the time it judged expiry by, or why it had none.
func TestStatusNamesTheTrustedTime(t *testing.T) {
	for _, tt := range []struct {
		tr   *runtime.TimeReport
		want string
	}{
		{&runtime.TimeReport{Source: "relay", Forward: time.Hour}, `"trustedTime":"relay","trustedTimeForwardMs":3600000`},
		{&runtime.TimeReport{Untrusted: "ntp: not synchronised"}, `"trustedTime":"none","trustedTimeWhy":"ntp: not synchronised"`},
		{&runtime.TimeReport{Source: "relay", Held: "relay: its time 2100-01-01T00:00:00Z is beyond"}, `"trustedTime":"relay","trustedTimeHeld":"relay: its time 2100-01-01T00:00:00Z is beyond"`},
		{nil, `"linkAttempts":0}`},
	} {
		var r statusReport
		summarise(&r, runtime.Report{LastWake: &runtime.WakeReport{Time: tt.tr}})
		b, err := json.Marshal(r.LastWake)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tt.want) {
			t.Errorf("lastWake %s, want it to contain %s", b, tt.want)
		}
	}
}
