package conffile

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
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

// TestBuildUpdate: "update" needs the running build's version and the
// owner's root in its directory (dataDir/update by default), and makes
// the device this build's architecture.
func TestBuildUpdate(t *testing.T) {
	data := t.TempDir()
	c := &struct{ Config runtime.Config }{}
	if err := (&File{DataDir: data, Update: &Update{Slots: "/s"}}).buildUpdate(&c.Config); err != nil || c.Config.Relay.Updates != nil {
		t.Errorf("an update section with only the slots: %v, %+v; want no update check", err, c.Config.Relay.Updates)
	}
	f := &File{DataDir: data, Update: &Update{BudgetBytes: 1 << 20}}
	if err := f.buildUpdate(&c.Config); err == nil || !strings.Contains(err.Error(), `"version"`) {
		t.Errorf("no version: %v", err)
	}
	f.Update.Version = 3
	c.Config.Store.DataDir = data
	if err := f.buildUpdate(&c.Config); err == nil || !strings.Contains(err.Error(), "the owner's root") {
		t.Errorf("no root: %v", err)
	}
	os.MkdirAll(filepath.Join(data, "update", "meta"), 0o700)
	os.WriteFile(filepath.Join(data, "update", "meta", "root.json"), []byte("{}"), 0o600)
	if err := f.buildUpdate(&c.Config); err != nil {
		t.Fatal(err)
	}
	u := c.Config.Relay.Updates
	if u == nil || u.Dir != filepath.Join(data, "update") || u.Installed != 3 || u.Device.GOARCH != goruntime.GOARCH || u.Rauc != nil {
		t.Errorf("updates %+v", u)
	}
	f.Update.Rauc = &Rauc{Args: []string{"--conf=/etc/rauc/system.conf"}}
	if err := f.buildUpdate(&c.Config); err != nil || c.Config.Relay.Updates.Rauc == nil {
		t.Errorf("with rauc: %v, %+v; want rauc's installer", err, c.Config.Relay.Updates)
	}
}

// TestRaucChecked: "rauc"'s command must be an absolute path and its
// environment NAME=value.
func TestRaucChecked(t *testing.T) {
	f := &File{Update: &Update{Rauc: &Rauc{Command: "rauc", Env: []string{"DBUS_SYSTEM_BUS_ADDRESS"}}}}
	err := f.checkUpdate()
	if err == nil || !strings.Contains(err.Error(), `rauc.command "rauc" is not an absolute path`) ||
		!strings.Contains(err.Error(), `rauc.env "DBUS_SYSTEM_BUS_ADDRESS" is not NAME=value`) {
		t.Fatalf("checkUpdate = %v", err)
	}
}
