package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Root returns the repository's top directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// PreviousRelease is the release this tree must work with, device with
// relay, both ways: the commit it follows (docs/upgrades.md). Move it
// forward at each release. test/compat runs that release's demo against
// this tree's relay and agent; test/updates runs its agent, which installs
// this tree's build from a rollout of this tree's relay.
const PreviousRelease = "9241c9398e2b891b33dfed8690e4c5a8a461bfa0"

// BuildAt builds the named commands (./cmd/<name>) of this repository as
// they were at the git revision rev, with CGO_ENABLED=0 as the packages
// ship them, into a directory of their own, and returns it. The tree is
// taken from git history (git archive), so the test needs the repository's
// history: a shallow clone ends the test through Unavailable, with the
// command that fetches it.
func BuildAt(t testing.TB, rev string, names ...string) string {
	t.Helper()
	return BuildAtWith(t, rev, BuildOptions{}, names...)
}

// BuildOptions are how BuildAtWith builds: for another platform, with the
// build tags and linker flags the tree at the revision names.
type BuildOptions struct {
	// Env is added to the build's environment (GOOS=linux GOARCH=arm64,
	// GOARM=6).
	Env []string
	// TagsFile is a file of the tree at the revision that holds the build
	// tags (scripts/agent-tags); "" for none.
	TagsFile string
	// LDFlags are the linker flags ("-s -w" strips, as scripts/cross.sh
	// does).
	LDFlags string
}

// BuildAtWith is BuildAt with the options o.
func BuildAtWith(t testing.TB, rev string, o BuildOptions, names ...string) string {
	t.Helper()
	git := RequireTool(t, "git")
	goTool := RequireTool(t, "go")
	root := Root()
	if err := exec.Command(git, "-C", root, "cat-file", "-e", rev+"^{commit}").Run(); err != nil {
		Unavailable(t, fmt.Sprintf("commit %s is not in this clone's history (git fetch --unshallow)", rev))
		return ""
	}
	base := t.TempDir()
	src, bin := filepath.Join(base, "src"), filepath.Join(base, "bin")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	unpack(t, git, root, rev, src)
	args := []string{"build", "-trimpath", "-o", bin + "/"}
	if o.TagsFile != "" {
		tags, err := os.ReadFile(filepath.Join(src, o.TagsFile))
		if err != nil {
			t.Fatalf("build tags at %s: %v", rev, err)
		}
		args = append(args, "-tags", strings.TrimSpace(string(tags)))
	}
	if o.LDFlags != "" {
		args = append(args, "-ldflags="+o.LDFlags)
	}
	for _, n := range names {
		args = append(args, "./cmd/"+n)
	}
	build := exec.Command(goTool, args...)
	build.Dir = src
	build.Env = append(append(os.Environ(), "CGO_ENABLED=0"), o.Env...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %v at %s: %v\n%s", names, rev, err, out)
	}
	return bin
}

// unpack writes the tree of rev in the repository root into dir.
func unpack(t testing.TB, git, root, rev, dir string) {
	t.Helper()
	archive := exec.Command(git, "-C", root, "archive", "--format=tar", rev)
	untar := exec.Command("tar", "-x", "-C", dir)
	var stderr bytes.Buffer
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin, archive.Stderr, untar.Stderr = pipe, &stderr, &stderr
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", rev, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", rev, err, stderr.String())
	}
}
