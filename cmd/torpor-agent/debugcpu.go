package main

import (
	"context"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/runtime"
)

// EnvDebugCPU, set to 1, is a debug knob for measuring where a wake's CPU
// goes (test/qemu's BenchmarkEmptyWakeVM sets it with
// TORPOR_EMPTYWAKE_DEBUGCPU): every log line carries cpu=, the process's
// CPU time so far (getrusage(2), user + system, every thread), and each
// phase of a wake logs a "phase" line as it ends. It is unstable: the
// lines and their attributes may change in any release, and it costs a
// log line per phase.
const EnvDebugCPU = "TORPOR_DEBUG_CPU"

// debugCPU wraps log and cfg's OnPhase hook as EnvDebugCPU asks; without
// it, log is returned as it is.
func debugCPU(log *slog.Logger, cfg *runtime.Config) *slog.Logger {
	if os.Getenv(EnvDebugCPU) != "1" {
		return log
	}
	log = slog.New(cpuHandler{log.Handler()})
	next := cfg.Hooks.OnPhase
	cfg.Hooks.OnPhase = func(p runtime.Phase) {
		if next != nil {
			next(p)
		}
		log.Info("phase", "name", p.Name, "took", p.Duration)
	}
	return log
}

// cpuHandler adds the process's CPU time to every record.
type cpuHandler struct{ slog.Handler }

func (h cpuHandler) Handle(ctx context.Context, r slog.Record) error {
	r.AddAttrs(slog.Duration("cpu", processCPU()))
	return h.Handler.Handle(ctx, r)
}

func (h cpuHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return cpuHandler{h.Handler.WithAttrs(as)}
}

func (h cpuHandler) WithGroup(name string) slog.Handler { return cpuHandler{h.Handler.WithGroup(name)} }

// processCPU is the process's CPU time, user and system, of every
// thread (getrusage(2), RUSAGE_SELF); 0 if it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
