package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/runtime/conffile"
	"github.com/torpor-dev/torpor/runtime/update/slots"
)

// TestProveHealthScaledClock: under a time scale the trial still gives its
// health command conffile.HealthTimeout of real time, the command being a
// program that runs in real time: one that finishes after a second of
// real time, past HealthTimeout on the scaled clock (factor 120: 0.5 s),
// confirms the slot.
func TestProveHealthScaledClock(t *testing.T) {
	dir := t.TempDir()
	build := filepath.Join(dir, "build")
	if err := os.WriteFile(build, []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := slots.New(filepath.Join(dir, "slots"), nil)
	if err := s.Install(build, "1.1.0", "1.0.0", slots.TrialOptions{}); err != nil {
		t.Fatal(err)
	}
	// The health command waits for a line on a FIFO: the test's release.
	fifo := filepath.Join(dir, "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	f := &conffile.File{Update: &conffile.Update{HealthCommand: []string{"/bin/sh", "-c", `read x < "$0"`, fifo}}}
	base := clocktest.New(time.Unix(0, 0))
	sc, err := clock.NewScaled(base, 120)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	created := base.TimerCreated()
	got := make(chan bool)
	go func() { got <- prove(f, sc, s, "a", log) }()
	<-created
	base.Advance(time.Second) // 120 s of the scaled clock
	// O_RDWR opens a FIFO without waiting for its reader, and the line
	// stays in the pipe for a reader that opens it later.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := io.WriteString(w, "ok\n"); err != nil {
		t.Fatal(err)
	}
	if ok := <-got; !ok {
		t.Errorf("prove with a health command taking 1 s of real time under a time scale of 120 = false; want true")
	}
	if st, err := s.Load(); err != nil || st.Active != "a" || st.Trial != nil {
		t.Errorf("slots after the proof: %+v, %v; want slot a active", st, err)
	}
}
