//go:build integration

package packages

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// sandbox is a copy-on-write view of this machine's root file system: an
// overlay whose upper layer is a temporary directory, mounted in a private
// mount namespace for each command, which then runs chrooted into it. dpkg
// installs packages there and runs their maintainer scripts (users,
// grants, systemctl enable) without changing the machine; what they
// changed stays in the upper layer from one command to the next. /proc and
// /dev are the machine's; /sys and /run are not mounted, so the scripts
// see a system that systemd did not boot, as in an image build.
type sandbox struct {
	upper, work, merged string
}

// mountScript mounts the overlay, /proc and /dev, then runs its arguments
// chrooted. It runs in a new mount namespace whose mounts propagate
// nowhere.
const mountScript = `set -e
mount -t overlay overlay -o lowerdir=/,upperdir="$1",workdir="$2" "$3"
mount -t proc proc "$3/proc"
mount --rbind /dev "$3/dev"
root=$3
shift 3
exec chroot "$root" "$@"`

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	testenv.RequireRoot(t)
	for _, tool := range []string{"unshare", "chroot", "mount", "dpkg"} {
		testenv.RequireTool(t, tool)
	}
	d := t.TempDir()
	s := &sandbox{filepath.Join(d, "upper"), filepath.Join(d, "work"), filepath.Join(d, "merged")}
	for _, dir := range []string{s.upper, s.work, s.merged} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.command("true").CombinedOutput(); err != nil {
		testenv.Unavailable(t, "cannot mount an overlay of / in a private mount namespace: "+err.Error()+" "+string(out))
	}
	// The packages are copied in so that dpkg inside can read them.
	if err := os.MkdirAll(filepath.Join(s.upper, "tmp", "debs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *sandbox) command(args ...string) *exec.Cmd {
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private",
		"sh", "-c", mountScript, "sh", s.upper, s.work, s.merged}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive"}
	return cmd
}

// run runs args in the sandbox and returns the combined output; it fails
// the test if the command fails.
func (s *sandbox) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.command(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("in the sandbox: %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// add copies packages into the sandbox and returns their paths there.
func (s *sandbox) add(t *testing.T, pkgs ...pkg) []string {
	t.Helper()
	var paths []string
	for _, p := range pkgs {
		b, err := os.ReadFile(debPath(t, p))
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join("/tmp/debs", filepath.Base(debPath(t, p)))
		if err := os.WriteFile(filepath.Join(s.upper, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, name)
	}
	return paths
}

// stat returns "mode user group" of path in the sandbox.
func (s *sandbox) stat(t *testing.T, path string) string {
	t.Helper()
	return strings.TrimSpace(s.run(t, "stat", "-c", "%a %U %G", path))
}

// exists reports whether path exists in the sandbox.
func (s *sandbox) exists(path string) bool {
	return s.command("test", "-e", path).Run() == nil
}

func TestInstallRelay(t *testing.T) {
	s := newSandbox(t)
	debs := s.add(t, pkg{name: "torporctl", arch: "amd64"}, pkg{name: "torpor-relay", arch: "amd64"})
	s.run(t, append([]string{"dpkg", "-i"}, debs...)...)

	if got := s.run(t, "getent", "passwd", "torpor-relay"); !strings.Contains(got, ":/var/lib/torpor-relay:") {
		t.Errorf("torpor-relay user: %q, want home /var/lib/torpor-relay", got)
	}
	checkStat(t, s, map[string]string{
		"/etc/torpor/relay.conf": "640 root root", // read by systemd, not the relay
		"/var/lib/torpor-relay":  "750 torpor-relay torpor-relay",
	})
	if got := strings.TrimSpace(s.run(t, "systemctl", "is-enabled", "torpor-relay.service")); got != "enabled" {
		t.Errorf("after installation torpor-relay.service is %q, want enabled (a complete deployment with no flags)", got)
	}
	serveAsUser(t, s)
	checkStat(t, s, map[string]string{ // the record log, the default queue engine
		"/var/lib/torpor-relay/queue.log":                      "700 torpor-relay torpor-relay",
		"/var/lib/torpor-relay/queue.log/0000000000000001.log": "600 torpor-relay torpor-relay",
	})

	// An upgrade (the same version again) keeps the enablement.
	s.run(t, append([]string{"dpkg", "-i"}, debs[1])...)
	if got := strings.TrimSpace(s.run(t, "systemctl", "is-enabled", "torpor-relay.service")); got != "enabled" {
		t.Errorf("after reinstallation torpor-relay.service is %q, want enabled", got)
	}

	out := s.run(t, "dpkg", "--purge", "torpor-relay")
	for _, gone := range []string{"/etc/torpor/relay.conf", "/etc/systemd/system/multi-user.target.wants/torpor-relay.service", "/usr/bin/torpor-relay"} {
		if s.exists(gone) {
			t.Errorf("after purge %s still exists", gone)
		}
	}
	if !s.exists("/var/lib/torpor-relay/queue.log/0000000000000001.log") || !strings.Contains(out, "kept /var/lib/torpor-relay") {
		t.Errorf("purge should keep /var/lib/torpor-relay and say so; output:\n%s", out)
	}
}

// serveAsUser runs the installed relay as the torpor-relay user with the
// unit's --data-dir (on ephemeral loopback ports), waits until it serves,
// fetches its metrics and stops it: the state directory the postinst made
// is one the relay can use. (Files are checked after it stops: one overlay
// upper layer must not be mounted twice at once.)
func serveAsUser(t *testing.T, s *sandbox) {
	t.Helper()
	testenv.RequireTool(t, "setpriv")
	cmd := s.command("setpriv", "--reuid=torpor-relay", "--regid=torpor-relay", "--clear-groups",
		"/usr/bin/torpor-relay", "--data-dir=/var/lib/torpor-relay", "--listen=127.0.0.1:0", "--mqtt-listen=127.0.0.1:0")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	addr, done := make(chan string, 1), make(chan struct{})
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		<-done
	}()
	go func() {
		defer close(done)
		defer close(addr)
		re := regexp.MustCompile(`msg="torpor-relay listening" addr=(\S+)`)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			t.Logf("relay: %s", sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var url string
	select {
	case url = <-addr:
	case <-ctx.Done():
		t.Fatal("the relay did not start serving within a minute")
	}
	if url == "" {
		t.Fatal("the relay exited before serving")
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics: %s", resp.Status)
	}
}

func checkStat(t *testing.T, s *sandbox, want map[string]string) {
	t.Helper()
	for path, w := range want {
		if got := s.stat(t, path); got != w {
			t.Errorf("%s is %q, want %q", path, got, w)
		}
	}
}

// TestInstallAgent installs the arm64 agent: its postinst runs the arm64
// torporctl through binfmt to generate the device key.
func TestInstallAgent(t *testing.T) {
	if _, err := os.Stat("/proc/sys/fs/binfmt_misc/qemu-aarch64"); err != nil {
		testenv.Unavailable(t, "qemu-aarch64 is not registered with binfmt_misc (make check-setup registers it)")
	}
	s := newSandbox(t)
	debs := s.add(t, pkg{name: "torporctl", arch: "arm64"}, pkg{name: "torpor-agent", arch: "arm64"})
	s.run(t, "dpkg", "--add-architecture", "arm64")
	out := s.run(t, append([]string{"dpkg", "-i"}, debs...)...)
	m := regexp.MustCompile(`this device is (did:key:z\w+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the postinst did not report a generated key:\n%s", out)
	}
	did := m[1]
	if got := strings.TrimSpace(s.run(t, "torporctl", "did", "/var/lib/torpor/agent.key")); got != did {
		t.Errorf("torporctl did agent.key = %q, the postinst said %q", got, did)
	}
	checkStat(t, s, map[string]string{
		"/etc/torpor/agent.json":    "640 root torpor-agent",
		"/var/lib/torpor":           "750 torpor-agent torpor-agent",
		"/var/lib/torpor/agent.key": "600 torpor-agent torpor-agent",
	})
	if got := s.run(t, "getent", "group", "gpio"); !strings.HasPrefix(got, "gpio:") {
		t.Errorf("group gpio: %q", got)
	}
	// Not enabled: the configuration needs the operator first.
	if got, _ := s.command("systemctl", "is-enabled", "torpor-agent.service").Output(); strings.TrimSpace(string(got)) != "disabled" {
		t.Errorf("after installation torpor-agent.service is %q, want disabled", got)
	}

	// The agent, as its user, reads the default configuration and refuses
	// it for the missing relay, purposes and handlers.
	cmd := s.command("setpriv", "--reuid=torpor-agent", "--regid=torpor-agent", "--init-groups",
		"/usr/bin/torpor-agent", "--config=/etc/torpor/agent.json")
	got, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(got), "no relay URL") {
		t.Errorf("torpor-agent with the default configuration: %v\n%s\nwant exit status 1 naming the missing relay", err, got)
	}

	// Reinstalling keeps the key.
	s.run(t, "dpkg", "-i", debs[1])
	if got := strings.TrimSpace(s.run(t, "torporctl", "did", "/var/lib/torpor/agent.key")); got != did {
		t.Errorf("after reinstallation the key is %q, want the original %q", got, did)
	}

	out = s.run(t, "dpkg", "--purge", "torpor-agent")
	if s.exists("/etc/torpor/agent.json") || s.exists("/usr/bin/torpor-agent") {
		t.Error("purge left the conffile or the binary")
	}
	if !s.exists("/var/lib/torpor/agent.key") || !strings.Contains(out, "kept /var/lib/torpor") {
		t.Errorf("purge should keep the key and say so; output:\n%s", out)
	}
}
