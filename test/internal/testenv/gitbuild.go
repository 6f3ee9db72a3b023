package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
// this tree's relay and agent; test/updates runs its agent under a relay
// that offers it a rollout.
const PreviousRelease = "d2faa430a527491299a7dd18fd1b5470edbfd049"

// BuildAt builds the named commands (./cmd/<name>) of this repository as
// they were at the git revision rev, with CGO_ENABLED=0 as the packages
// ship them, into a directory of their own, and returns it. The tree is
// taken from git history (git archive), so the test needs the repository's
// history: a shallow clone ends the test through Unavailable, with the
// command that fetches it.
func BuildAt(t testing.TB, rev string, names ...string) string {
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
	archive := exec.Command(git, "-C", root, "archive", "--format=tar", rev)
	untar := exec.Command("tar", "-x", "-C", src)
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
	args := []string{"build", "-trimpath", "-o", bin + "/"}
	for _, n := range names {
		args = append(args, "./cmd/"+n)
	}
	build := exec.Command(goTool, args...)
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %v at %s: %v\n%s", names, rev, err, out)
	}
	return bin
}
