package broker

import (
	"testing"
	"time"
)

// TestNoSysTopicTicks: the broker never publishes mochi's $SYS topics on
// a timer. No client may subscribe to them (authHook), and each tick, once
// a second by default, stopped the world for memory statistics and wrote
// mqtt.db: 372 KB in 10 s of an idle relay before, none after
// (/proc/PID/io write_bytes).
func TestNoSysTopicTicks(t *testing.T) {
	b, _, _, _ := startStored(t)
	defer b.Close()
	got := time.Duration(b.srv.Options.SysTopicResendInterval) * time.Second
	if got < 100*365*24*time.Hour || got <= 0 {
		t.Errorf("$SYS topics every %v; want never (a century or more, without overflow)", got)
	}
}
