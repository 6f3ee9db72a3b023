package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// forbidden are the packages torporctl must not link (issue 30): the
// relay, the broker, the relay's stores, a NATS server, the agent's
// runtime and the conformance runner (cmd/torpor-conformance links them).
// Each is a path prefix: a package is forbidden when its path is one or
// lies under one.
var forbidden = []string{
	"github.com/torpor-dev/torpor/transport/relay",
	"github.com/torpor-dev/torpor/transport/broker",
	"github.com/torpor-dev/torpor/store/queue",
	"github.com/torpor-dev/torpor/store/agents",
	"github.com/torpor-dev/torpor/store/jsstore",
	"github.com/torpor-dev/torpor/runtime",
	"github.com/torpor-dev/torpor/conformance",
	"github.com/nats-io/nats-server",
	"github.com/mochi-mqtt/server",
}

// TestLinksNoRelayOrRuntime checks torporctl's dependencies, from
// `go list -deps` (GOPROXY=off: the modules are in the cache once the
// command builds), against forbidden. internal/deptest holds the
// module-wide rules; this one keeps the operator's tool small (under
// 12 MiB on armv6, scripts/cross.sh).
func TestLinksNoRelayOrRuntime(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, p := range deps {
		for _, f := range forbidden {
			if p == f || strings.HasPrefix(p, f+"/") {
				t.Errorf("torporctl links %s (forbidden: %s); trace it with go list -deps -f '{{.ImportPath}}: {{join .Imports \" \"}}' ./cmd/torporctl", p, f)
			}
		}
	}
}
