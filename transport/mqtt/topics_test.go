package mqtt

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"dev-9", "a", "Pi_Zero.2", "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a/b", "+", "#", "dev 9", "$SYS", "é", strings.Repeat("x", 129)} {
		if err := CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", bad)
		}
	}
	for _, bad := range []string{"", "/a", "a//b", "a/+", "$share/x", "a/"} {
		if err := CheckPrefix(bad); err == nil {
			t.Errorf("CheckPrefix(%q) = nil, want an error", bad)
		}
	}
	got := Topics{Device: "dev-9"}
	want := []string{"torpor/v1/dev-9/cmd", "torpor/v1/dev-9/reply", "torpor/v1/dev-9/status", "torpor/v1/dev-9/event", "torpor/v1/dev-9/sync"}
	if d := cmp.Diff(want, []string{got.Command(), got.Reply(), got.Status(), got.Event(), got.Sync()}); d != "" {
		t.Errorf("topics (-want +got):\n%s", d)
	}
}
