package conffile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/update"
)

// buildUpdate sets Config.Relay.Updates from "update": the directory
// must hold the owner's root (meta/root.json), and the device is this
// build's board profile and architecture.
func (f *File) buildUpdate(c *runtime.Config) error {
	if f.Update == nil {
		return nil
	}
	u := f.Update
	if u.Version == 0 {
		return errors.New(`"update": "version" (the running build's, as its target was signed) is required`)
	}
	dir := u.Dir
	if dir == "" {
		if c.Store.DataDir == "" {
			return nil // reported as no data directory
		}
		dir = filepath.Join(c.Store.DataDir, "update")
	}
	if _, err := os.Stat(filepath.Join(dir, "meta", "root.json")); err != nil {
		return fmt.Errorf(`"update": the owner's root: %w (provision it from torporctl update keys init)`, err)
	}
	c.Relay.Updates = &runtime.Updates{Dir: dir, Installed: u.Version, Budget: u.BudgetBytes,
		Device: update.Device{Board: c.Board, GOARCH: goruntime.GOARCH, GOARM: goarm()}}
	return nil
}

// goarm is the GOARM this binary was built with ("" off 32-bit ARM).
func goarm() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || goruntime.GOARCH != "arm" {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "GOARM" {
			v, _, _ := strings.Cut(s.Value, ",") // "6,softfloat"
			return v
		}
	}
	return ""
}
