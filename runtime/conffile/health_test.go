package conffile

import (
	"testing"

	"github.com/torpor-dev/torpor/runtime"
)

// TestBuildHealth: an agent without a board profile still reads its
// health (uptime, a CPU zone, flash), so the status carries what any
// Linux machine can tell.
func TestBuildHealth(t *testing.T) {
	c := &runtime.Config{}
	c.Store.DataDir = t.TempDir()
	if err := (&File{}).buildWake(c); err != nil || c.Health == nil {
		t.Fatalf("buildWake with no board: Health set %v, %v; want a reader", c.Health != nil, err)
	}
}
