package slots

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
)

// TestMain doubles as a slot's binary: with SLOTS_TEST_CONFIRM set to a
// slots directory, the test binary confirms the slot the launcher gave it
// and then runs until SIGTERM, as an agent that proved itself does.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SLOTS_TEST_CONFIRM"); dir != "" {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM)
		if _, err := New(dir, nil).Confirm(os.Getenv(EnvSlot)); err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(4)
		}
		os.Stdout.WriteString("confirmed\n")
		<-stop
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// trial installs a build and starts its trial.
func trial(t *testing.T) (*Slots, *clocktest.Clock, Plan) {
	t.Helper()
	dir := t.TempDir()
	clk := clocktest.New(t0)
	s := New(filepath.Join(dir, "slots"), clk)
	must(t, s.Install(build(t, dir, "2.0.0"), "2.0.0", "1.0.0", TrialOptions{Starts: 2, Deadline: 10 * time.Minute}))
	p, err := s.Launch("1.0.0")
	must(t, err)
	return s, clk, p
}

func failures(t *testing.T, s *Slots) string {
	st, err := s.Load()
	must(t, err)
	if st.Trial == nil {
		return "confirmed"
	}
	return strings.Join(st.Trial.Failures, "; ")
}

func TestSuperviseCrashAtStart(t *testing.T) {
	s, _, p := trial(t)
	code, err := s.Supervise(context.Background(), exec.Command("/bin/sh", "-c", "exit 3"), p)
	if err != nil || code != 1 {
		t.Fatalf("status %d, %v", code, err)
	}
	if f := failures(t, s); f != "start 1: exited with status 3" {
		t.Fatalf("failures %q", f)
	}
	code, _ = s.Supervise(context.Background(), exec.Command(filepath.Join(t.TempDir(), "gone")), p)
	if f := failures(t, s); code != 1 || !strings.Contains(f, "start 1: did not start") {
		t.Fatalf("status %d, failures %q", code, f)
	}
}

func TestSuperviseKillsAHang(t *testing.T) {
	s, clk, p := trial(t)
	created := clk.TimerCreated()
	res := make(chan int, 1)
	go func() {
		code, _ := s.Supervise(context.Background(), exec.Command("/bin/sh", "-c", "exec sleep 600"), p)
		res <- code
	}()
	<-created
	clk.Advance(10*time.Minute - time.Second)
	if n := clk.Pending(); n != 1 {
		t.Fatalf("%d timers wait before the deadline, want the trial's", n)
	}
	clk.Advance(time.Second)
	if code := <-res; code != 1 {
		t.Fatalf("status %d", code)
	}
	if f := failures(t, s); f != "start 1: no proof within 10m0s: killed" {
		t.Fatalf("failures %q", f)
	}
}

func TestSuperviseLeavesAConfirmedChild(t *testing.T) {
	s, clk, p := trial(t)
	exe, err := os.Executable()
	must(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "SLOTS_TEST_CONFIRM="+s.Dir)
	out, err := cmd.StdoutPipe()
	must(t, err)
	ctx, stop := context.WithCancel(context.Background())
	created := clk.TimerCreated()
	res := make(chan int, 1)
	go func() {
		code, _ := s.Supervise(ctx, cmd, p)
		res <- code
	}()
	<-created
	buf := make([]byte, 10)
	if n, _ := out.Read(buf); string(buf[:n]) != "confirmed\n" {
		t.Fatalf("child said %q", buf[:n])
	}
	clk.Advance(time.Hour) // past the deadline: confirmed, not killed
	stop()
	if code := <-res; code != 0 {
		t.Fatalf("status %d", code)
	}
	if f := failures(t, s); f != "confirmed" {
		t.Fatalf("failures %q", f)
	}
	if p, _ := s.Launch("1.0.0"); p.Trial || p.Slot != "a" {
		t.Fatalf("after the confirm: %+v", p)
	}
}
