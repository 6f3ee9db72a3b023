//go:build integration

package crash

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// killChild runs the test function child of this test binary as a child
// process with env set (and TORPOR_CRASH_TRIAL=trial), keeps the lines of
// its standard output that keep accepts, as keep returns them, kills it
// with SIGKILL once it has kept killAfter of them, and returns every line
// kept, including those still in the pipe at the kill.
func killChild(t *testing.T, child, env string, trial, killAfter int, keep func(string) (string, bool)) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env, fmt.Sprintf("TORPOR_CRASH_TRIAL=%d", trial))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var kept []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line, ok := keep(sc.Text())
		if !ok {
			continue // the test framework's own output
		}
		kept = append(kept, line)
		if len(kept) == killAfter {
			cmd.Process.Kill() // SIGKILL: no deferred code, no flush, no close
		}
	}
	if err := cmd.Wait(); len(kept) >= killAfter && (err == nil || !strings.Contains(err.Error(), "killed")) {
		t.Fatalf("trial %d: child ended with %v, want killed", trial, err)
	}
	return kept
}
