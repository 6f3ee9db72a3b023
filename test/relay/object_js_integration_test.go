//go:build integration

package relay

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// TestJSObjectSnippet runs docs/a2a.md's JavaScript snippet that builds a
// signed Governed Object (test/relay/node/object.mjs, with the npm
// packages canonicalize, @noble/curves and @scure/base) and checks that
// what it prints is a Governed Object part whose object parses and
// verifies as the relay and a device read it.
func TestJSObjectSnippet(t *testing.T) {
	node, dir := nodeDir(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "canonicalize")); err != nil {
		testenv.Unavailable(t, "test/relay/node/node_modules lacks canonicalize; run scripts/setup.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "object.mjs")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("object.mjs: %v", err)
	}
	var p a2a.Part
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("object.mjs printed %q: %v", out, err)
	}
	d, err := a2a.ReadDataObject(p)
	if err != nil || p.MediaType != a2a.MediaTypeDataObject {
		t.Fatalf("object.mjs printed no Governed Object part (%v): %s", err, out)
	}
	o, err := governed.Parse(d.Object)
	if err != nil {
		t.Fatalf("the object does not parse: %v\n%s", err, d.Object)
	}
	if err := o.VerifySignature(); err != nil {
		t.Errorf("the object's signature does not verify: %v\n%s", err, d.Object)
	}
	if o.Governance.Purpose != "comms:message" || string(o.Payload) != `{"text":"hello"}` {
		t.Errorf("object %s", d.Object)
	}
}
