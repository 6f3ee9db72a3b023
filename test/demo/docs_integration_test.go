//go:build integration

package demo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// TestOperationsDocumentsEveryFlag keeps docs/operations.md, the user's
// configuration reference, in step with the binaries: every flag that
// torpor-relay and torpor-agent print with -h, and every torporctl
// command, must appear in it.
func TestOperationsDocumentsEveryFlag(t *testing.T) {
	goPath := testenv.RequireTool(t, "go")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command(goPath, "build", "-o", bin+"/", "./cmd/torpor-relay", "./cmd/torpor-agent", "./cmd/torporctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)
	for _, b := range []string{"torpor-relay", "torpor-agent"} {
		out, _ := exec.Command(filepath.Join(bin, b), "-h").CombinedOutput()
		flags := flagLine.FindAllStringSubmatch(string(out), -1)
		if len(flags) < 5 {
			t.Fatalf("%s -h printed %d flags:\n%s", b, len(flags), out)
		}
		for _, f := range flags {
			if !strings.Contains(string(doc), "`--"+f[1]) {
				t.Errorf("docs/operations.md does not document %s --%s", b, f[1])
			}
		}
	}
	out, _ := exec.Command(filepath.Join(bin, "torporctl"), "help").CombinedOutput()
	cmds := regexp.MustCompile(`(?m)^  ([a-z][a-z0-9-]+)\s`).FindAllStringSubmatch(string(out), -1)
	if len(cmds) < 3 {
		t.Fatalf("torporctl help listed %d commands:\n%s", len(cmds), out)
	}
	for _, c := range cmds {
		if !strings.Contains(string(doc), "torporctl "+c[1]) {
			t.Errorf("docs/operations.md does not document torporctl %s", c[1])
		}
	}
}
