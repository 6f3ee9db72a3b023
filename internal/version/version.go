// Package version tells which build of Torpor is running.
//
// A packaged binary carries the Debian package's version, stamped at link
// time by scripts/packages.sh:
//
//	go build -ldflags "-X github.com/torpor-dev/torpor/internal/version.stamp=1.2.3" ./cmd/...
//
// Any other build reports what the Go toolchain recorded in its build
// information (runtime/debug.ReadBuildInfo): the module version, which for a
// build from a git work tree is the pseudo-version the toolchain derives
// from the commit (v0.0.0-TIME-REVISION, "+dirty" when modified; Go 1.24 and
// later) and "(devel)" when no VCS information was recorded, and the VCS
// revision, its time and whether the tree had uncommitted changes.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// stamp is the version scripts/packages.sh links in; empty otherwise.
var stamp string

// Devel is the module version the toolchain records for a build from a
// work tree rather than from a tagged module.
const Devel = "(devel)"

// Info describes one build.
type Info struct {
	// Version is the stamped package version, else the module version:
	// for a build from a git work tree the pseudo-version the toolchain
	// derives from the commit (v0.0.0-TIME-REVISION, "+dirty" when
	// modified), "(devel)" when the build recorded no VCS information.
	Version string
	// Revision, Time and Modified are the VCS revision the binary was
	// built from, its commit time (RFC 3339) and whether the work tree had
	// uncommitted changes; empty when the build recorded none.
	Revision, Time string
	Modified       bool
	// Go is the toolchain version, such as "go1.26.8".
	Go string
}

// Get returns the running binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(stamp, bi)
}

func fromBuildInfo(stamped string, bi *debug.BuildInfo) Info {
	i := Info{Version: stamped, Go: runtime.Version()}
	if bi == nil {
		if i.Version == "" {
			i.Version = Devel
		}
		return i
	}
	if i.Version == "" {
		i.Version = bi.Main.Version
	}
	if i.Version == "" {
		i.Version = Devel
	}
	if bi.GoVersion != "" {
		i.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// Short is the version alone, as an Agent Card or a status names it: the
// stamped or module version, and for a development build the first 12
// digits of its revision ("(devel)+ff06040a1b2c", "+dirty" after it when the
// tree was modified), so that two development builds can be told apart.
func (i Info) Short() string {
	if i.Version != Devel || i.Revision == "" {
		return i.Version
	}
	v := i.Version + "+" + abbrev(i.Revision)
	if i.Modified {
		v += ".dirty"
	}
	return v
}

// String is the line --version prints after the program's name:
// "1.2.3 (revision ff06040a1b2c, 2026-12-03T11:00:00Z) go1.26.8 linux/arm64".
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	if i.Revision != "" {
		fmt.Fprintf(&b, " (revision %s", abbrev(i.Revision))
		if i.Time != "" {
			b.WriteString(", " + i.Time)
		}
		if i.Modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s %s/%s", i.Go, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

func abbrev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
