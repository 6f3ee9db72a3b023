//go:build integration

package updates

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"testing"
)

// TestDeltaBetweenBuilds: two builds of torpor-agent that differ in their
// version stamp (1.0.0 and 2.0.0). The owner signs 2.0.0 with a delta
// from 1.0.0 (torporctl update sign-target --delta-from) and publishes
// both; an agent running the 1.0.0 binary fetches the delta alone, patches
// its own binary with it and verifies the result as the 2.0.0 target.
func TestDeltaBetweenBuilds(t *testing.T) {
	w := newWorld(t)
	w.agentBin = bin(t, v1)
	next, err := os.ReadFile(bin(t, v2))
	if err != nil {
		t.Fatal(err)
	}
	out := ctl(t, "update", "sign-target", "--dir", w.owner, "--name", "torpor-agent/2/linux-"+goruntime.GOARCH, "--version", "2",
		"--goarch", goruntime.GOARCH, "--goarm", "", "--delta-from", bin(t, v1), bin(t, v2))
	t.Log(out)
	ctl(t, "update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey, "--root", "1")
	agent, dir := w.agent(t, "plot-1", 1, 64<<20)
	m := agent.Wait(t, regexp.MustCompile(`msg="update check" .*outcome=verified .*bytes=(\d+)`), "version=2")
	fetched, _ := strconv.Atoi(m[1])
	t.Logf("the %d-byte build travelled as a %d-byte delta", len(next), fetched)
	if fetched <= 0 || fetched > len(next)/20 {
		t.Errorf("fetched %d bytes for a %d-byte build; want a delta under 5 %%", fetched, len(next))
	}
	got, err := os.ReadFile(filepath.Join(dir, "update", "verified", sha256Hex(next)))
	if err != nil || !bytes.Equal(got, next) {
		t.Fatalf("the verified file: %d bytes, %v; want the %d-byte 2.0.0 build", len(got), err, len(next))
	}
}

func sha256Hex(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }
