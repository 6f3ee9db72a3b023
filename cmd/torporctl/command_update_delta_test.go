package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/runtime/update"
)

// TestUpdateDeltaPublish: sign-target --delta-from signs the build with a
// delta from the previous one, publish uploads both, and a device running
// the previous build fetches the delta alone and ends with the new build
// verified against the target; --gzip with --delta-from is refused.
func TestUpdateDeltaPublish(t *testing.T) {
	op := didtest.Key(t, 1)
	opFile := keyFile(t, op)
	srv, repo, relayKeys := updateRelay(t, op.DID())
	dir, _ := keysInit(t, relayKeys)
	builds := t.TempDir()
	v1 := bytes.Repeat([]byte("torpor-agent build, version one; "), 20_000)
	v2 := bytes.Clone(v1)
	copy(v2[300_000:], "version two")
	os.WriteFile(filepath.Join(builds, "v1"), v1, 0o700)
	os.WriteFile(filepath.Join(builds, "v2"), v2, 0o700)
	var errb bytes.Buffer
	if code := run(context.Background(), []string{"update", "sign-target", "--dir", dir, "--name", "a/2", "--version", "2", "--goarm", "6",
		"--gzip", "--delta-from", filepath.Join(builds, "v1"), filepath.Join(builds, "v2")}, &bytes.Buffer{}, &errb); code == 0 ||
		!strings.Contains(errb.String(), "--delta-from and --gzip do not go together") {
		t.Errorf("--gzip with --delta-from = %d, %q", code, errb.String())
	}
	out := updCtl(t, "update", "sign-target", "--dir", dir, "--name", "a/2", "--version", "2", "--goarm", "6",
		"--delta-from", filepath.Join(builds, "v1"), filepath.Join(builds, "v2"))
	if !strings.Contains(out, "delta from") {
		t.Fatalf("sign-target printed %q", out)
	}
	updCtl(t, "update", "publish", "--dir", dir, "--relay", srv.URL, "--key", opFile, "--root", "1")
	devDir := provisioned(t, dir)
	c, err := update.New(update.Config{Dir: devDir, Source: repoSource{repo}, Installed: 1, Running: filepath.Join(builds, "v1"),
		Device: update.Device{GOARCH: "arm", GOARM: "6"}, Now: func() (time.Time, error) { return time.Now(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(res.Path)
	if !bytes.Equal(got, v2) || len(res.Custom.Deltas) != 1 || res.Bytes != res.Custom.Deltas[0].Length || res.Bytes > int64(len(v2))/100 {
		t.Errorf("the device got %d bytes (equal %v) fetching %d, deltas %+v; want the %d-byte build from a small delta",
			len(got), bytes.Equal(got, v2), res.Bytes, res.Custom.Deltas, len(v2))
	}
}
