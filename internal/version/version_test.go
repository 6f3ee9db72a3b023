package version

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	rev := "ff06040a1b2c3d4e5f60718293a4b5c6d7e8f901"
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-12-03T11:00:00Z"}, {Key: "vcs.modified", Value: "false"}}
	dirty := append(append([]debug.BuildSetting(nil), vcs[:2]...), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	tests := []struct {
		name, stamp string
		bi          *debug.BuildInfo
		short, long string
	}{
		{"stamped", "1.2.3", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: Devel}, Settings: vcs},
			"1.2.3", "1.2.3 (revision ff06040a1b2c, 2026-12-03T11:00:00Z) go1.26.8"},
		{"tagged module", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}},
			"v1.4.0", "v1.4.0 go1.26.8"},
		{"work tree", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: Devel}, Settings: vcs},
			"(devel)+ff06040a1b2c", "(devel) (revision ff06040a1b2c, 2026-12-03T11:00:00Z) go1.26.8"},
		{"modified work tree", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: Devel}, Settings: dirty},
			"(devel)+ff06040a1b2c.dirty", "(devel) (revision ff06040a1b2c, 2026-12-03T11:00:00Z, modified) go1.26.8"},
		{"no vcs", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: Devel}},
			"(devel)", "(devel) go1.26.8"},
		{"no build info", "", nil, "(devel)", "(devel) " + runtime.Version()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := fromBuildInfo(tt.stamp, tt.bi)
			if got := i.Short(); got != tt.short {
				t.Errorf("Short = %q, want %q", got, tt.short)
			}
			want := tt.long + " " + runtime.GOOS + "/" + runtime.GOARCH
			if got := i.String(); got != want {
				t.Errorf("String = %q, want %q", got, want)
			}
		})
	}
}

// TestStampedBuild links a program with the stamp set, as
// scripts/packages.sh does, and checks that Get reports it.
func TestStampedBuild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "v")
	cmd := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/torpor-dev/torpor/internal/version.stamp=9.8.7", "./testdata/printversion")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "9.8.7 ") {
		t.Errorf("stamped binary reports %q, want 9.8.7 first", got)
	}
}
