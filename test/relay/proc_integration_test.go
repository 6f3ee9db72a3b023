//go:build integration

package relay

import (
	"testing"

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
