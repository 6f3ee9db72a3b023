package tsmls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// Version is the ts-mls version the peer is written for and the lock file
// pins; Locate refuses any other installed version.
const Version = "1.6.4"

// DirEnv names the environment variable that overrides the folder holding
// peer.mjs and its node_modules.
const DirEnv = "TORPOR_TSMLS_DIR"

var (
	// ErrNoNode is returned by Locate when node is not on PATH.
	ErrNoNode = errors.New("tsmls: node not found on PATH")
	// ErrNoModules is returned by Locate when the peer's npm packages are
	// missing or are not the locked versions.
	ErrNoModules = errors.New("tsmls: npm packages not installed")
)

// Locate returns the node executable and the folder of peer.mjs with its
// installed node_modules: $TORPOR_TSMLS_DIR, or test/interop/node under the
// module root found from the working directory. It returns an error
// wrapping ErrNoNode or ErrNoModules, saying how to install what is
// missing.
func Locate() (node, dir string, err error) {
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("%w (Node.js 20 is needed for the ts-mls interop tests)", ErrNoNode)
	}
	dir = os.Getenv(DirEnv)
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", "", err
		}
		dir = filepath.Join(root, "test", "interop", "node")
	}
	if err := checkModules(dir); err != nil {
		return "", "", err
	}
	return node, dir, nil
}

func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("tsmls: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("tsmls: no go.mod above %s; set %s", wd, DirEnv)
		}
	}
}

// checkModules reports whether dir has peer.mjs and the locked packages.
func checkModules(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "peer.mjs")); err != nil {
		return fmt.Errorf("tsmls: no peer.mjs in %s: %w", dir, err)
	}
	fix := fmt.Sprintf("run scripts/setup.sh, or npm ci in %s", dir)
	for _, pkg := range []struct{ name, want string }{{"ts-mls", Version}, {"@noble/hashes", "2.0.1"}} {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg.name), "package.json"))
		if err != nil {
			return fmt.Errorf("%w: %s missing (%s)", ErrNoModules, pkg.name, fix)
		}
		var meta struct{ Version string }
		if err := json.Unmarshal(b, &meta); err != nil || meta.Version != pkg.want {
			return fmt.Errorf("%w: %s is %q, want %s (%s)", ErrNoModules, pkg.name, meta.Version, pkg.want, fix)
		}
	}
	return nil
}

// StartT starts a peer for a test and closes it when the test ends. A
// missing node or missing packages skip the test, or fail it when
// TORPOR_REQUIRE_TOOLS=1 or CI=true. When the test fails, the peer's
// stderr is logged.
func StartT(t testing.TB, cfg *Config) *Peer {
	t.Helper()
	testenv.RequireTool(t, "node")
	var err error
	if cfg == nil || cfg.Dir == "" {
		_, _, err = Locate()
	} else {
		err = checkModules(cfg.Dir)
	}
	if err != nil {
		testenv.Unavailable(t, err.Error())
		return nil
	}
	p, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("tsmls.Start: %v", err)
	}
	t.Cleanup(func() {
		p.Close()
		if t.Failed() {
			if s := p.Stderr(); s != "" {
				t.Logf("ts-mls peer stderr:\n%s", s)
			}
		}
	})
	return p
}
