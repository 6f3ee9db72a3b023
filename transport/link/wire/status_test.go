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

// TestParseStatusHealth: the health member round-trips, is optional (a
// status without it, as older agents send, parses with Health nil), is
// ignored by a reader that does not know it (a struct without the member,
// as older relays decode), and its bounds are checked.
func TestParseStatusHealth(t *testing.T) {
	temp, thr := int64(-5250), uint32(0x50005)
	h := &StatusHealth{UptimeS: 11520, CPUMilliC: &temp, Flash: &StatusFlash{Free: 1 << 30, Total: 8 << 30},
		SupplyMV: 5020, Throttled: &thr, WiFi: &StatusWiFi{Interface: "wlan0", Quality: 70, SignalDBm: -40}}
	b, _ := json.Marshal(Status{Version: "1", Health: h})
	got, err := ParseStatus(b)
	if err != nil || got.Health == nil || *got.Health.CPUMilliC != temp || *got.Health.Flash != *h.Flash || *got.Health.WiFi != *h.WiFi || *got.Health.Throttled != thr {
		t.Fatalf("ParseStatus(%s) = %+v, %v", b, got.Health, err)
	}
	if now, seen := got.Health.UnderVoltage(); !now || !seen {
		t.Errorf("UnderVoltage of 0x50005 = %v, %v; want true, true", now, seen)
	}
	var old struct {
		Version   string `json:"version"`
		HeldCount int    `json:"heldCount"`
	}
	if err := json.Unmarshal(b, &old); err != nil || old.Version != "1" {
		t.Errorf("a reader without the health member: %+v, %v", old, err)
	}
	if got, err := ParseStatus([]byte(`{"version":"1","heldCount":0}`)); err != nil || got.Health != nil {
		t.Errorf("a status without health: %+v, %v; want it accepted with no health", got.Health, err)
	}
	for name, tc := range map[string]struct {
		h       StatusHealth
		wantErr string
	}{
		"more free than total": {h: StatusHealth{Flash: &StatusFlash{Free: 2, Total: 1}}, wantErr: "2 bytes of flash free of 1"},
		"long interface":       {h: StatusHealth{WiFi: &StatusWiFi{Interface: strings.Repeat("w", 16)}}, wantErr: "at most 15"},
	} {
		b, _ := json.Marshal(Status{Version: "1", Health: &tc.h})
		if _, err := ParseStatus(b); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: ParseStatus error %v; want %q", name, err, tc.wantErr)
		}
	}
	var none *StatusHealth
	if now, seen := none.UnderVoltage(); now || seen {
		t.Errorf("UnderVoltage of no health = %v, %v", now, seen)
	}
}

// TestParseStatusUpdate: the update member round-trips, a reader without
// it (an older relay) still decodes the status, and an update without an
// outcome or with an over-long detail is refused.
func TestParseStatusUpdate(t *testing.T) {
	u := &StatusUpdate{Outcome: UpdateRefused, Target: "torpor-agent/7/linux-armv6", Version: 7, Reason: "freeze",
		Detail: "timestamp is older than the trusted one", Bytes: 4096}
	b, _ := json.Marshal(Status{Version: "1", Update: u})
	got, err := ParseStatus(b)
	if err != nil || got.Update == nil || *got.Update != *u {
		t.Fatalf("ParseStatus(%s) = %+v, %v", b, got.Update, err)
	}
	var old struct {
		Version string        `json:"version"`
		Health  *StatusHealth `json:"health"`
	}
	if err := json.Unmarshal(b, &old); err != nil || old.Version != "1" {
		t.Errorf("a reader without the update member: %+v, %v", old, err)
	}
	for name, tc := range map[string]struct {
		u       StatusUpdate
		wantErr string
	}{
		"no outcome":  {u: StatusUpdate{Reason: "freeze"}, wantErr: "without an outcome"},
		"long detail": {u: StatusUpdate{Outcome: UpdateRefused, Detail: strings.Repeat("d", 513)}, wantErr: "at most 512"},
		"long target": {u: StatusUpdate{Outcome: UpdateRefused, Target: strings.Repeat("t", 257)}, wantErr: "at most 256"},
	} {
		b, _ := json.Marshal(Status{Version: "1", Update: &tc.u})
		if _, err := ParseStatus(b); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: ParseStatus error %v; want %q", name, err, tc.wantErr)
		}
	}
}

// TestParseStatusInstall: the install member round-trips, is optional, is
// ignored by a reader without it (an older relay), and its result, version
// and reason are checked.
func TestParseStatusInstall(t *testing.T) {
	at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	u := &StatusInstall{Result: InstallRolledBack, Version: "1.4.0", From: "1.3.2", Reason: "no proof in 3 starts: start 1: exited with status 2", At: at}
	b, _ := json.Marshal(Status{Version: "1.3.2", Install: u})
	got, err := ParseStatus(b)
	if err != nil || got.Install == nil || *got.Install != *u {
		t.Fatalf("ParseStatus(%s) = %+v, %v", b, got.Install, err)
	}
	var old struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &old); err != nil || old.Version != "1.3.2" {
		t.Errorf("a reader without the install member: %+v, %v", old, err)
	}
	for name, tc := range map[string]struct {
		u       StatusInstall
		wantErr string
	}{
		"unknown result": {u: StatusInstall{Result: "maybe", Version: "1"}, wantErr: `install result "maybe"`},
		"no version":     {u: StatusInstall{Result: InstallInstalled}, wantErr: "without a version"},
		"long reason":    {u: StatusInstall{Result: InstallRolledBack, Version: "1", Reason: strings.Repeat("r", MaxInstallReason+1)}, wantErr: "over 1024 bytes"},
	} {
		b, _ := json.Marshal(Status{Version: "1", Install: &tc.u})
		if _, err := ParseStatus(b); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: ParseStatus error %v; want %q", name, err, tc.wantErr)
		}
	}
}

// TestParseStatusOS: the operating-system members round-trip; an OS
// install is installed or failed (never rolled back), with a version and
// a bounded reason; an OS check has an outcome.
func TestParseStatusOS(t *testing.T) {
	at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	in := &StatusInstall{Result: InstallFailed, Version: "3", Reason: "signature verification failed", At: at}
	u := &StatusUpdate{Outcome: UpdateVerified, Target: "os/3/rpi", Version: 3}
	b, _ := json.Marshal(Status{Version: "1", OSInstall: in, OSUpdate: u})
	got, err := ParseStatus(b)
	if err != nil || got.OSInstall == nil || *got.OSInstall != *in || got.OSUpdate == nil || *got.OSUpdate != *u {
		t.Fatalf("ParseStatus(%s) = %+v %+v, %v", b, got.OSInstall, got.OSUpdate, err)
	}
	for name, st := range map[string]Status{
		`OS install result "rolled-back"`: {Version: "1", OSInstall: &StatusInstall{Result: InstallRolledBack, Version: "3"}},
		"without a version":               {Version: "1", OSInstall: &StatusInstall{Result: InstallInstalled}},
		"over 1024 bytes":                 {Version: "1", OSInstall: &StatusInstall{Result: InstallFailed, Version: "3", Reason: strings.Repeat("r", MaxInstallReason+1)}},
		"without an outcome":              {Version: "1", OSUpdate: &StatusUpdate{Target: "t"}},
	} {
		b, _ := json.Marshal(st)
		if _, err := ParseStatus(b); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("ParseStatus error %v; want %q", err, name)
		}
	}
}
