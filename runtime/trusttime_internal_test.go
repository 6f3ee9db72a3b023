package runtime

import (
	"log/slog"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime/trusted"
)

// TestEstablishedLevel: the "time established" line is a debug line when
// the time agrees with the system clock to a second, moved forward or
// not (a relay's time in whole seconds, a guest's clock on a scale of
// 120, move it by fractions), and an info line when it is a second or
// more off either way.
func TestEstablishedLevel(t *testing.T) {
	sys := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		now     time.Time
		forward time.Duration
		want    slog.Level
	}{
		{"agrees", sys, 0, slog.LevelDebug},
		{"moved forward 600ms", sys.Add(600 * time.Millisecond), 600 * time.Millisecond, slog.LevelDebug},
		{"900ms behind", sys.Add(-900 * time.Millisecond), 0, slog.LevelDebug},
		{"moved forward 1s", sys.Add(time.Second), time.Second, slog.LevelInfo},
		{"an hour behind", sys.Add(-time.Hour), 0, slog.LevelInfo},
	}
	for _, tt := range tests {
		r := trusted.Reading{Now: tt.now, System: sys, Forward: tt.forward}
		if got := establishedLevel(r); got != tt.want {
			t.Errorf("establishedLevel(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
