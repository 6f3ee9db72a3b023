package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRequired(t *testing.T) {
	tests := []struct {
		name, require, ci string
		want              bool
	}{
		{"neither", "", "", false},
		{"require tools", "1", "", true},
		{"ci", "", "true", true},
		{"require zero", "0", "false", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TORPOR_REQUIRE_TOOLS", tt.require)
			t.Setenv("CI", tt.ci)
			if got := Required(); got != tt.want {
				t.Errorf("Required() with TORPOR_REQUIRE_TOOLS=%q CI=%q = %v, want %v", tt.require, tt.ci, got, tt.want)
			}
		})
	}
}

func TestRequireToolFindsShell(t *testing.T) {
	if p := RequireTool(t, "sh"); p == "" {
		t.Errorf("RequireTool(sh) = %q, want a path", p)
	}
}

// recorder captures whether a helper skipped or failed without ending the
// real test.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skipf(string, ...any)  { r.skipped = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestRequireToolMissing(t *testing.T) {
	for _, required := range []bool{false, true} {
		ci := ""
		if required {
			ci = "true"
		}
		t.Setenv("TORPOR_REQUIRE_TOOLS", "")
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		RequireTool(r, "torpor-no-such-tool-xyz")
		if r.failed != required || r.skipped == required {
			t.Errorf("RequireTool(missing) with required=%v: failed=%v skipped=%v", required, r.failed, r.skipped)
		}
	}
}

func TestProcNextTakesLinesInTurn(t *testing.T) {
	p := Start(t, RequireTool(t, "sh"), "-c", "echo 'wake 1' >&2; echo other >&2; echo 'wake 2' >&2; echo 'wake 3' >&2")
	if got := p.Next(t, 1, "wake"); len(got) != 1 || got[0] != "wake 1" {
		t.Fatalf("first Next(1, wake) = %q, want [wake 1]", got)
	}
	if got := p.Next(t, 2, "wake"); len(got) != 2 || got[0] != "wake 2" || got[1] != "wake 3" {
		t.Fatalf("second Next(2, wake) = %q, want [wake 2 wake 3]", got)
	}
}

func TestSignedSHA256(t *testing.T) {
	dir := t.TempDir()
	meta := `{"signed":{"targets":{"torpor-agent/2/linux-arm":{"hashes":{"sha256":"ab12"}}}}}`
	if err := os.WriteFile(filepath.Join(dir, "targets.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := SignedSHA256(t, dir, "torpor-agent/2/linux-arm"); got != "ab12" {
		t.Errorf("SignedSHA256(torpor-agent/2/linux-arm) = %q, want ab12", got)
	}
	for _, tt := range []struct{ name, dir, target string }{
		{"unnamed target", dir, "torpor-agent/3/linux-arm"},
		{"no metadata", t.TempDir(), "torpor-agent/2/linux-arm"},
	} {
		r := &recorder{TB: t}
		if SignedSHA256(r, tt.dir, tt.target); !r.failed {
			t.Errorf("SignedSHA256 with %s did not fail", tt.name)
		}
	}
}
