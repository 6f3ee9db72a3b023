package testenv

import (
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
