package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
)

// TestDebugCPU: with TORPOR_DEBUG_CPU=1 every line carries the process's
// CPU time and each phase logs a line; without it the logger and the
// hooks are left alone.
func TestDebugCPU(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, nil))
	var cfg runtime.Config
	if log := debugCPU(base, &cfg); log != base || cfg.Hooks.OnPhase != nil {
		t.Fatal("without TORPOR_DEBUG_CPU: the logger or the hooks changed")
	}
	t.Setenv(EnvDebugCPU, "1")
	var seen []string
	cfg.Hooks.OnPhase = func(p runtime.Phase) { seen = append(seen, p.Name) }
	log := debugCPU(base, &cfg).With("component", "agent")
	log.Info("waking")
	cfg.Hooks.OnPhase(runtime.Phase{Name: runtime.PhaseLink, Duration: time.Millisecond})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "msg=waking component=agent cpu=") ||
		!strings.Contains(lines[1], "msg=phase name=link took=1ms cpu=") {
		t.Errorf("lines:\n%s\nwant a waking line and a phase line, each with cpu=", buf.String())
	}
	if len(seen) != 1 {
		t.Errorf("the hook it wraps saw %v, want the link phase", seen)
	}
}
