package wire

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestParseStatusLost: the lost hand-offs are bounded like the held
// actions, and a member ParseStatus does not know is ignored, which is
// what lets a relay or console older than a status member (lostCount and
// lost were added after held) accept the status of a newer agent.
func TestParseStatusLost(t *testing.T) {
	lost := func(n int) []StatusLost {
		out := make([]StatusLost, n)
		for i := range out {
			out[i] = StatusLost{ObjectID: "o", Issuer: "did:example:a", Purpose: "comms:message", RecordedAt: time.Unix(0, 0).UTC()}
		}
		return out
	}
	for name, tc := range map[string]struct {
		st      Status
		wantErr string
	}{
		"listed and counted": {st: Status{Version: "1", LostCount: 40, Lost: lost(MaxStatusLost)}},
		"count below listed": {st: Status{Version: "1", LostCount: 1, Lost: lost(2)}, wantErr: "lostCount 1 below"},
		"too many listed":    {st: Status{Version: "1", LostCount: 40, Lost: lost(MaxStatusLost + 1)}, wantErr: "at most 32"},
	} {
		b, _ := json.Marshal(tc.st)
		got, err := ParseStatus(b)
		switch {
		case tc.wantErr == "" && (err != nil || got.LostCount != tc.st.LostCount || len(got.Lost) != len(tc.st.Lost)):
			t.Errorf("%s: ParseStatus = %+v, %v", name, got, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: ParseStatus error %v; want %q", name, err, tc.wantErr)
		}
	}
	got, err := ParseStatus([]byte(`{"version":"1","heldCount":0,"aMemberFromTheFuture":{"x":1}}`))
	if err != nil || got.Version != "1" {
		t.Fatalf("a status with an unknown member: %+v, %v; want it accepted", got, err)
	}
}
