package conffile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUpdateSection: "update" is read from a real file, its slots
// directory and trial bounds come out as written or defaulted, and bad
// values are each refused with their reason.
func TestUpdateSection(t *testing.T) {
	p := filepath.Join(t.TempDir(), "agent.json")
	os.WriteFile(p, []byte(`{"version":1,"dataDir":"/srv/torpor","update":{"trialStarts":2,"trialDeadline":"90s","healthCommand":["/usr/bin/app-health","--quick"]}}`), 0o600)
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.checkUpdate(); err != nil {
		t.Fatal(err)
	}
	if d := f.SlotsDir(); d != "/srv/torpor/slots" {
		t.Errorf("slots %q", d)
	}
	if o := f.Trial(); o.Starts != 2 || o.Deadline != 90*time.Second {
		t.Errorf("trial %+v", o)
	}
	if d := (&File{}).SlotsDir(); d != DefaultSlots {
		t.Errorf("default slots %q", d)
	}
	if d := (&File{DataDir: "/x", Update: &Update{Slots: "/y"}}).SlotsDir(); d != "/y" {
		t.Errorf("named slots %q", d)
	}
	bad := &File{Update: &Update{Slots: "slots", TrialStarts: 9, TrialDeadline: -1, HealthCommand: []string{"app-health"}}}
	err = bad.checkUpdate()
	for _, want := range []string{`slots "slots" is not an absolute path`, "trialStarts 9", "trialDeadline -1ns is negative", `healthCommand "app-health"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want %q", err, want)
		}
	}
	if _, err := bad.Build(); err == nil || !strings.Contains(err.Error(), "trialStarts 9") {
		t.Errorf("Build: %v", err)
	}
}
