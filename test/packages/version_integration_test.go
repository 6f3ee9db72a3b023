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
	r := newVersionRepo(t)
	git, write := r.git, r.write

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
		if got, w := r.version(st.env...), st.want(); got != w {
			t.Errorf("%s: packages.sh --version = %q, want %q", st.name, got, w)
		}
	}
}

// versionRepo is TestVersion's scratch directory, holding a copy of
// scripts/packages.sh; it becomes a git repository with the test's first
// git call.
type versionRepo struct {
	t   *testing.T
	dir string
}

// newVersionRepo makes the scratch directory and copies the script in.
func newVersionRepo(t *testing.T) *versionRepo {
	t.Helper()
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
	return &versionRepo{t: t, dir: dir}
}

// git runs git with args in the repository and returns its trimmed output.
func (r *versionRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// version returns what scripts/packages.sh --version prints in the
// repository, with VERSION empty unless env sets it.
func (r *versionRepo) version(env ...string) string {
	r.t.Helper()
	cmd := exec.Command("bash", "scripts/packages.sh", "--version")
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "VERSION=")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("packages.sh --version: %v %s", err, stderrOf(err))
	}
	return strings.TrimSpace(string(out))
}

// write writes content to the file named "file" in the repository.
func (r *versionRepo) write(content string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "file"), []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}
