// Package mqtttest starts real MQTT 5 brokers for tests: a mosquitto
// process on loopback with its own configuration and data directory, and
// the broker torpor-relay embeds (mochi-mqtt, started exactly as the relay
// starts it). It also has a recording Device for tests of mqtt.Client.
package mqtttest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Broker is a broker a test can restart.
type Broker interface {
	// URL is the broker's mqtt:// URL; it stays the same across restarts.
	URL() string
	// Restart stops the broker (saving its state) and starts it again on
	// the same port with the same data.
	Restart(t testing.TB)
	// Stop stops it.
	Stop(t testing.TB)
}

// ErrNoMosquitto is returned by FindMosquitto when mosquitto is not
// installed.
var ErrNoMosquitto = errors.New("mqtttest: mosquitto not found (apt-get install mosquitto; make check-setup)")

// FindMosquitto returns the path of the mosquitto binary: on PATH, or in
// /usr/sbin where the Debian package puts it (not on a normal user's PATH).
func FindMosquitto() (string, error) {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto", nil
	}
	return "", ErrNoMosquitto
}

// Mosquitto is a mosquitto process serving one test.
type Mosquitto struct {
	bin, dir string
	port     int

	mu sync.Mutex
	// mu guards all following fields.
	cmd    *exec.Cmd
	exited chan struct{}
	log    *logBuffer
}

// StartMosquitto starts the mosquitto at bin on a free loopback port with
// a configuration and persistence directory in t.TempDir(), and stops it
// at the end of the test. It returns once mosquitto listens. It allows
// anonymous clients.
func StartMosquitto(t testing.TB, bin string) *Mosquitto {
	t.Helper()
	return StartMosquittoWith(t, bin, "allow_anonymous true")
}

// StartMosquittoWith is StartMosquitto with the configuration lines conf
// (such as "include_dir DIR") in place of "allow_anonymous true".
func StartMosquittoWith(t testing.TB, bin string, conf ...string) *Mosquitto {
	t.Helper()
	drops := slices.Contains(conf, "user mosquitto")
	dir := t.TempDir()
	if drops {
		dir = unprivilegedDir(t)
	}
	m := &Mosquitto{bin: bin, dir: dir, port: freePort(t)}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if drops {
		chownToMosquitto(t, filepath.Join(dir, "data"))
	}
	conf = append([]string{
		fmt.Sprintf("listener %d 127.0.0.1", m.port),
		"persistence true",
		"persistence_location " + filepath.Join(dir, "data") + "/",
		"max_queued_messages 10000",
		// Without it mosquitto's small packets wait for Nagle's algorithm
		// and the peer's delayed ACK: about 40 ms per round trip.
		"set_tcp_nodelay true",
		"log_dest stderr", // unbuffered: stdout to a pipe is block-buffered
		"log_type error",
		"log_type warning",
		"log_type notice",
		"log_type information",
		"connection_messages true",
	}, conf...)
	if os.Geteuid() == 0 && !drops {
		// As root mosquitto switches to user "mosquitto", which cannot
		// enter the test's private temporary directory.
		conf = append(conf, "user root")
	}
	if err := os.WriteFile(filepath.Join(dir, "mosquitto.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.start(t)
	t.Cleanup(func() { m.Stop(t) })
	return m
}

// unprivilegedDir is a directory the user mosquitto can enter (t.TempDir's
// parent is private to root), removed when the test ends.
func unprivilegedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mosquitto-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chownToMosquitto gives path to the user mosquitto, which a mosquitto
// started by root with "user mosquitto" (Debian's default) runs as.
func chownToMosquitto(t testing.TB, path string) {
	t.Helper()
	u, err := user.Lookup("mosquitto")
	if err != nil {
		t.Fatalf("user mosquitto (the Debian package creates it): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// URL implements Broker.
func (m *Mosquitto) URL() string { return "mqtt://127.0.0.1:" + strconv.Itoa(m.port) }

// Pid is the process id of the running mosquitto (0 when stopped); it
// changes at Restart.
func (m *Mosquitto) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Log returns what mosquitto logged so far.
func (m *Mosquitto) Log() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.log.String()
}

func (m *Mosquitto) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(m.bin, "-c", filepath.Join(m.dir, "mosquitto.conf"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting mosquitto: %v", err)
	}
	ready := make(chan struct{})
	lb := &logBuffer{}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		var once sync.Once
		for sc.Scan() {
			line := sc.Text()
			lb.add(line)
			// "running" comes once every listener listens; "Opening ipv4
			// listen socket" comes before the socket does, and a client
			// dialling then is refused.
			if strings.HasPrefix(line[strings.IndexByte(line, ' ')+1:], "mosquitto version") && strings.HasSuffix(line, " running") {
				once.Do(func() { close(ready) })
			}
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited, m.log = cmd, exited, lb
	m.mu.Unlock()
	select {
	case <-ready:
	case <-exited:
		t.Fatalf("mosquitto exited at start:\n%s", lb)
	case <-time.After(20 * time.Second):
		t.Fatalf("mosquitto did not start listening within 20s:\n%s", lb)
	}
}

// detach returns the running process and its exit channel, and forgets
// them: the caller stops it. cmd is nil if mosquitto is not running.
func (m *Mosquitto) detach() (cmd *exec.Cmd, exited chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cmd, exited = m.cmd, m.exited
	m.cmd = nil
	return cmd, exited
}

// Stop implements Broker: SIGTERM, which makes mosquitto save its
// persistence file, then wait for it to exit.
func (m *Mosquitto) Stop(t testing.TB) {
	t.Helper()
	cmd, exited := m.detach()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT) // in case a test paused it
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Errorf("mosquitto did not stop on SIGTERM within 20s")
	}
}

// Kill kills mosquitto (SIGKILL), as a crash would: it saves nothing, so
// the sessions, subscriptions and queued messages it held since its last
// save (with this configuration, since it started) are gone. It returns
// once the process has exited; Restart starts it again.
func (m *Mosquitto) Kill(t testing.TB) {
	t.Helper()
	cmd, exited := m.detach()
	if cmd == nil {
		t.Fatal("mosquitto is not running")
	}
	cmd.Process.Kill()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("mosquitto did not exit on SIGKILL within 20s")
	}
}

// Restart implements Broker.
func (m *Mosquitto) Restart(t testing.TB) {
	t.Helper()
	m.Stop(t)
	m.start(t)
}

// Pause stops the mosquitto process (SIGSTOP) without closing its
// connections: clients see a broker that accepts bytes and answers
// nothing, as behind a dead network path. It returns once the kernel
// reports the process stopped. Resume continues it.
func (m *Mosquitto) Pause(t testing.TB) {
	t.Helper()
	pid := m.signal(t, syscall.SIGSTOP)
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatalf("reading the state of mosquitto: %v", err)
		}
		// /proc/PID/stat: "pid (comm) S ..."; S is T when stopped.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'T' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("mosquitto did not stop on SIGSTOP")
		}
		runtime.Gosched()
	}
}

// Resume continues a paused mosquitto (SIGCONT).
func (m *Mosquitto) Resume(t testing.TB) { m.signal(t, syscall.SIGCONT) }

func (m *Mosquitto) signal(t testing.TB, s os.Signal) int {
	t.Helper()
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd == nil {
		t.Fatal("mosquitto is not running")
	}
	if err := cmd.Process.Signal(s); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// logBuffer keeps the last lines of a process's output.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
	if len(b.lines) > 500 {
		b.lines = b.lines[len(b.lines)-500:]
	}
}

func (b *logBuffer) String() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}
