package envelope

import (
	"testing"

	"github.com/torpor-dev/torpor/clock/clocktest"
)

// FuzzVerify: any text is refused or verified without a panic, and a
// passport that verifies has a valid envelope.
func FuzzVerify(f *testing.F) {
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJFZERTQSJ9.e30.AA")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := Verify(tok, "did:web:x", clocktest.New(t0))
		if err != nil {
			return
		}
		for _, s := range c.Envelope {
			if s.Validate() != nil {
				t.Fatalf("verified an invalid scope %+v", s)
			}
		}
	})
}

// FuzzCoversJSON: any parent and child text is decided without a panic.
func FuzzCoversJSON(f *testing.F) {
	for _, k := range []string{"act", "res", "cap", "cp", "scope", "envelope"} {
		f.Add(k, `"mcp://t/**"`, `"mcp://t/a"`)
	}
	f.Add("scope", `{"v":"lap-scope-v0","act":"data:read","res":"mcp://t/**","depth":1}`,
		`{"v":"lap-scope-v0","act":"data:read","res":"mcp://t/a"}`)
	f.Fuzz(func(t *testing.T, kind, parent, child string) {
		_, _ = RegistryV0().CoversJSON(kind, []byte(parent), []byte(child))
	})
}
