package conffile

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/runtime"
)

// TestBuildUpdate: "update" needs the running build's version and the
// owner's root in its directory (dataDir/update by default), and makes
// the device this build's architecture.
func TestBuildUpdate(t *testing.T) {
	data := t.TempDir()
	f := &File{DataDir: data, Update: &Update{}}
	c := &struct{ Config runtime.Config }{}
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
	if u == nil || u.Dir != filepath.Join(data, "update") || u.Installed != 3 || u.Device.GOARCH != goruntime.GOARCH {
		t.Errorf("updates %+v", u)
	}
}
