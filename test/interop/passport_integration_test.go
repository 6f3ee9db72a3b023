//go:build integration

package interop

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/interop/tsmls"
)

// jose runs test/interop/node/passport.mjs (the npm jose package) with one
// JSON request and returns its stdout, or its stderr as the error.
func jose(t *testing.T, req any) (string, error) {
	t.Helper()
	testenv.RequireTool(t, "node")
	node, dir, err := tsmls.Locate()
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "jose", "package.json"))
	}
	if err != nil {
		testenv.Unavailable(t, "jose: "+err.Error())
		return "", err
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "passport.mjs"), string(b))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", errors.New(strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

func passportKey(t *testing.T, b byte) *did.PrivateKey {
	k, err := did.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var b64u = base64.RawURLEncoding

// TestPassportJoseInterop checks both directions: a passport issued by
// jose (EdDSA, the principal's did:key as kid) verifies with
// governed/envelope, and one issued by governed/envelope verifies with
// jose, for the right audience only.
func TestPassportJoseInterop(t *testing.T) {
	principal, agent, device := passportKey(t, 1), passportKey(t, 2), passportKey(t, 3).DID().String()
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	depth := 1
	claims := envelope.Claims{Iss: principal.DID().String(), Sub: agent.DID().String(), Aud: device,
		Iat: t0.Unix(), Exp: t0.Add(10 * time.Minute).Unix(),
		Envelope: []envelope.Scope{{V: envelope.Version, Act: "data:read", Res: "mcp://t/sensors/**", Depth: &depth}}}

	tok, err := jose(t, map[string]any{"op": "issue", "seed": b64u.EncodeToString(principal.Seed()),
		"x": b64u.EncodeToString(principal.Public()), "kid": principal.DID().String(), "claims": claims})
	if err != nil {
		t.Fatalf("jose issue: %v", err)
	}
	got, err := envelope.Verify(tok, device, clocktest.New(t0.Add(time.Minute)))
	if err != nil || got.Sub != claims.Sub || got.Envelope[0].Res != "mcp://t/sensors/**" {
		t.Fatalf("Go verify of jose's passport: %+v, %v", got, err)
	}

	tok, err = envelope.Issue(principal, claims)
	if err != nil {
		t.Fatal(err)
	}
	verify := map[string]any{"op": "verify", "token": tok, "x": b64u.EncodeToString(principal.Public()),
		"aud": device, "now": t0.Add(time.Minute).Unix()}
	out, err := jose(t, verify)
	if err != nil || !strings.Contains(out, `"kid":"`+principal.DID().String()+`"`) || !strings.Contains(out, `"lap-scope-v0"`) {
		t.Fatalf("jose verify of Torpor's passport: %s, %v", out, err)
	}
	verify["aud"] = agent.DID().String()
	if _, err := jose(t, verify); err == nil {
		t.Error("jose verified a passport for another audience")
	}
	verify["aud"], verify["now"] = device, t0.Add(time.Hour).Unix()
	if _, err := jose(t, verify); err == nil {
		t.Error("jose verified an expired passport")
	}
}
