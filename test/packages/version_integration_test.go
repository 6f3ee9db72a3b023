//go:build integration

package packages

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// TestVersion runs scripts/packages.sh --version in a scratch git
// repository through untagged, tagged, later, modified and pre-release
// states.
func TestVersion(t *testing.T) {
	testenv.RequireTool(t, "git")
	testenv.RequireTool(t, "bash")
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(repoRoot(t), "scripts", "packages.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "packages.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	version := func(env ...string) string {
		t.Helper()
		cmd := exec.Command("bash", "scripts/packages.sh", "--version")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "VERSION=")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("packages.sh --version: %v %s", err, stderrOf(err))
		}
		return strings.TrimSpace(string(out))
	}
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "file"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	git("init", "-q")
	write("1")
	git("add", ".")
	git("commit", "-q", "-m", "one")
	steps := []struct {
		name string
		do   func()
		want func() string
		env  []string
	}{
		{"untagged", func() {}, func() string { return "0.0.0+g" + git("rev-parse", "--short=12", "HEAD") }, nil},
		{"tagged", func() { git("tag", "v1.2.0") }, func() string { return "1.2.0" }, nil},
		{"after the tag", func() { write("2"); git("commit", "-q", "-am", "two") },
			func() string { return "1.2.0+1.g" + git("rev-parse", "--short", "HEAD") }, nil},
		{"modified", func() { write("3") },
			func() string { return "1.2.0+1.g" + git("rev-parse", "--short", "HEAD") + ".dirty" }, nil},
		{"pre-release", func() { git("commit", "-q", "-am", "three"); git("tag", "v2.0.0-rc.1") },
			func() string { return "2.0.0~rc.1" }, nil},
		{"pre-release modified", func() { write("4") }, func() string { return "2.0.0~rc.1+dirty" }, nil},
		{"set", func() {}, func() string { return "9.9.9" }, []string{"VERSION=9.9.9"}},
	}
	for _, st := range steps {
		st.do()
		if got, w := version(st.env...), st.want(); got != w {
			t.Errorf("%s: packages.sh --version = %q, want %q", st.name, got, w)
		}
	}
}
