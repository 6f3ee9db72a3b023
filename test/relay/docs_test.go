package relay

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// root returns the module's root directory.
func root(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsIncludeExamples: docs/a2a.md shows the client examples exactly as
// the files that TestA2AJSExample and TestA2AGoClient run, between their
// "docs/a2a.md: begin" and "end" markers.
func TestDocsIncludeExamples(t *testing.T) {
	doc := readFile(t, "docs/a2a.md")
	for _, ex := range []struct{ file, name, fence string }{
		{"test/relay/node/example.mjs", "JavaScript", "```js\n"},
		{"test/relay/node/object.mjs", "Object", "```js\n"},
		{"test/relay/example_a2ago_integration_test.go", "Go", "```go\n"},
	} {
		src := readFile(t, ex.file)
		_, rest, ok1 := strings.Cut(src, "// docs/a2a.md: begin "+ex.name+"\n")
		code, _, ok2 := strings.Cut(rest, "// docs/a2a.md: end "+ex.name)
		if !ok1 || !ok2 {
			t.Fatalf("%s lacks the docs/a2a.md markers", ex.file)
		}
		code = strings.Trim(code, "\n") + "\n"
		if !strings.Contains(doc, ex.fence+code+"```") {
			t.Errorf("docs/a2a.md does not show %s as it is; copy lines between its markers into the %s block", ex.file, ex.name)
		}
	}
}

// TestDocsTokenExample: the worked DID Bearer token of docs/a2a.md is the
// token transport/bearer issues for the vectors' Alice, and its claim
// bytes and signature are the ones shown.
func TestDocsTokenExample(t *testing.T) {
	doc := readFile(t, "docs/a2a.md")
	seed := make([]byte, 32)
	seed[31] = 1
	alice, err := did.NewKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := bearer.Issue(alice, "https://relay.example/a/x/a2a/jsonrpc", time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	claims := `{"aud":"https://relay.example","did":"` + alice.DID().String() + `","exp":1768478700,"iat":1768478400,"v":1}`
	for _, want := range []string{"   " + tok + "\n", "   " + claims + "\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/a2a.md lacks %s", want)
		}
	}
	_, b64sig, _ := strings.Cut(strings.TrimPrefix(tok, bearer.Prefix), ".")
	sig, err := base64.RawURLEncoding.DecodeString(b64sig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc, "   "+hex.EncodeToString(sig)+"\n") {
		t.Errorf("docs/a2a.md lacks the signature %x", sig)
	}
}
