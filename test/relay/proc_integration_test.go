//go:build integration

package relay

import (
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// relayProc is a running torpor-relay.
type relayProc = relaytest.Relay

// startRelay runs torpor-relay on data dir with loopback ports chosen by
// the kernel and waits until it serves.
func startRelay(t testing.TB, dataDir string, extra ...string) *relayProc {
	t.Helper()
	return relaytest.Start(t, dataDir, extra...)
}

// What a device does on its link, in a few lines.
var (
	publish = relaytest.Publish
	pullAll = relaytest.PullAll
)

func testKey(tb testing.TB, n int) *did.PrivateKey {
	tb.Helper()
	seed := make([]byte, 32)
	seed[30], seed[31] = byte(n>>8), byte(n)
	k, err := did.NewKeyFromSeed(seed)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}
