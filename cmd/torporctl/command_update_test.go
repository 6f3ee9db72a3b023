package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// updateRelay is the relay's update repository (a real bbolt file, the
// relay's online keys) behind the operator endpoints' paths, taking
// only the operator's tokens.
func updateRelay(t *testing.T, op did.DID) (*httptest.Server, *updaterepo.Repo, [2]*did.PrivateKey) {
	keys := [2]*did.PrivateKey{didtest.Key(t, 40), didtest.Key(t, 41)}
	srv, repo := updateRelayAt(t, op, filepath.Join(t.TempDir(), "updates.db"), keys)
	return srv, repo, keys
}

// updateRelayAt is updateRelay on the repository file path with the
// relay's keys.
func updateRelayAt(t *testing.T, op did.DID, path string, keys [2]*did.PrivateKey) (*httptest.Server, *updaterepo.Repo) {
	repo, err := updaterepo.Open(updaterepo.Config{Path: path, Snapshot: keys[0].Ed25519(), Timestamp: keys[1].Ed25519()})
	if err != nil {
		t.Fatal(err)
	}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := (&bearer.Verifier{Audience: srv.URL, Purpose: bearer.OperatorPurpose(r.Method, r.URL.EscapedPath())}).Verify(r.Header.Get("Authorization"))
		if err != nil || id != op || r.Method != http.MethodPut {
			http.Error(w, `{"error":"not_operator"}`, http.StatusForbidden)
			return
		}
		b, _ := io.ReadAll(r.Body)
		sum := ""
		switch r.URL.Path {
		case "/operator/updates/root":
			err = repo.SetRoot(b)
		case "/operator/updates/blob":
			sum, err = repo.AddBlob(b)
		case "/operator/updates/targets":
			err = repo.Publish(b)
		}
		if err != nil {
			http.Error(w, `{"error":"update_refused","message":"`+strings.ReplaceAll(err.Error(), `"`, `'`)+`"}`, http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{"sha256":"` + sum + `","used":1}`))
	}))
	t.Cleanup(func() { srv.Close(); repo.Close() })
	return srv, repo
}

type repoSource struct{ r *updaterepo.Repo }

func (s repoSource) Metadata(_ context.Context, name string, max int64) ([]byte, error) {
	b, err := s.r.Metadata(name, max)
	if errors.Is(err, updaterepo.ErrNotFound) {
		return nil, update.ErrNotFound
	}
	return b, err
}
func (s repoSource) Fresh(context.Context) error { return s.r.Fresh() }
func (s repoSource) Blob(_ context.Context, sum string, off, n int64) ([]byte, error) {
	return s.r.Blob(sum, off, n)
}

func updCtl(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("torporctl %s = %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// keysInit runs keys init in a new owner's directory, naming relayKeys as
// the relay's snapshot and timestamp keys, with the further flags extra;
// it returns the directory and what keys init printed.
func keysInit(t *testing.T, relayKeys [2]*did.PrivateKey, extra ...string) (dir, out string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "owner")
	args := append([]string{"update", "keys", "init", "--dir", dir,
		"--relay-snapshot", relayKeys[0].DID().String(), "--relay-timestamp", relayKeys[1].DID().String()}, extra...)
	return dir, updCtl(t, args...)
}

// provisioned returns a device's update directory holding the owner's
// first root (ownerDir's 1.root.json), as a device is provisioned.
func provisioned(t *testing.T, ownerDir string) string {
	t.Helper()
	devDir := t.TempDir()
	root, err := os.ReadFile(filepath.Join(ownerDir, "1.root.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(devDir, "meta"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(devDir, "meta", "root.json"), root, 0o600); err != nil {
		t.Fatal(err)
	}
	return devDir
}

// deviceCheck is a device provisioned with the owner's first root.
func deviceCheck(t *testing.T, devDir string, repo *updaterepo.Repo, installed uint64) (update.Result, error) {
	c, err := update.New(update.Config{Dir: devDir, Source: repoSource{repo}, Installed: installed,
		Device: update.Device{Board: "rpi-zero-w", GOARCH: "arm", GOARM: "6"}, Now: func() (time.Time, error) { return time.Now(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	return c.Check(context.Background())
}

// keyFile saves k in a key file in a new temporary directory of the
// test's and returns its path, for a command's --key.
func keyFile(t *testing.T, k *did.PrivateKey) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "id.key")
	if err := did.SaveKey(path, k, false); err != nil {
		t.Fatal(err)
	}
	return path
}
