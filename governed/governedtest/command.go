package governedtest

import (
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
)

// Command signs with k a Governed Object shaped as an operator's set-mode
// command (runtime/manage's SchemaCommand and purpose, a day's TTL) for
// the device didtest.Key(t, 2), issued at at with sequence number seq and
// args, for the tests of packages that carry commands without reading
// them.
func Command(t testing.TB, k *did.PrivateKey, seq uint64, at time.Time, args any) *governed.Object {
	t.Helper()
	o, err := governed.Sign(k, governed.Template{IssuedAt: at, Semantic: governed.Semantic{Schema: "https://torpor.dev/schemas/mqtt/command/v1"},
		Payload: map[string]any{"device": didtest.Key(t, 2).DID().String(), "seq": seq, "op": "set-mode", "args": args},
		Purpose: "torpor:command", TTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return o
}
