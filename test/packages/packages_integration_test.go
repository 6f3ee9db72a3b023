//go:build integration

package packages

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// pkg is one package `make packages` builds.
type pkg struct {
	name, arch string
	// goarch and goarm are what its binary was built for.
	goarch, goarm string
}

func (p pkg) String() string { return p.name + "_" + p.arch }

var want = []pkg{
	{"torpor-agent", "arm64", "arm64", ""},
	{"torpor-agent", "armhf", "arm", "7"},
	{"torpor-agent", "armel", "arm", "6"},
	{"torpor-relay", "amd64", "amd64", ""},
	{"torpor-relay", "arm64", "arm64", ""},
	{"torporctl", "amd64", "amd64", ""},
	{"torporctl", "arm64", "arm64", ""},
	{"torporctl", "armhf", "arm", "7"},
	{"torporctl", "armel", "arm", "6"},
}

// built holds the one build of the packages a test run makes.
var built struct {
	once         sync.Once
	dir, version string
	err          error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// repoRoot is the repository's top directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// packages builds the packages once per test binary (scripts/packages.sh
// with OUT set to a temporary directory) and returns that directory and the
// version they carry.
func packages(t testing.TB) (dir, version string) {
	t.Helper()
	for _, tool := range []string{"bash", "git", "go", "dpkg-deb"} {
		testenv.RequireTool(t, tool)
	}
	root := repoRoot(t)
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "torpor-packages-")
		if built.err != nil {
			return
		}
		script := filepath.Join(root, "scripts", "packages.sh")
		out, err := exec.Command("bash", script, "--version").Output()
		if err != nil {
			built.err = fmt.Errorf("packages.sh --version: %v", err)
			return
		}
		built.version = strings.TrimSpace(string(out))
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), "OUT="+built.dir, "VERSION="+built.version)
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("packages.sh: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir, built.version
}

// debPath is the file of p.
func debPath(t testing.TB, p pkg) string {
	dir, version := packages(t)
	return filepath.Join(dir, fmt.Sprintf("%s_%s_%s.deb", p.name, version, p.arch))
}

// dpkgDeb runs dpkg-deb with args and returns its standard output.
func dpkgDeb(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("dpkg-deb", args...).Output()
	if err != nil {
		t.Fatalf("dpkg-deb %s: %v %s", strings.Join(args, " "), err, stderrOf(err))
	}
	return string(out)
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// extract unpacks p's files (dpkg-deb -x) into a new directory.
func extract(t testing.TB, p pkg) string {
	t.Helper()
	dir := t.TempDir()
	dpkgDeb(t, "-x", debPath(t, p), dir)
	return dir
}

// control unpacks p's control area (dpkg-deb -e) into a new directory.
func control(t testing.TB, p pkg) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "DEBIAN")
	dpkgDeb(t, "-e", debPath(t, p), dir)
	return dir
}

func TestPackageSet(t *testing.T) {
	dir, version := packages(t)
	var wantFiles []string
	for _, p := range want {
		wantFiles = append(wantFiles, fmt.Sprintf("%s_%s_%s.deb", p.name, version, p.arch))
	}
	got, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	sort.Strings(wantFiles)
	sort.Strings(got)
	if diff := cmp.Diff(wantFiles, got); diff != "" {
		t.Errorf("packages built (-want +got):\n%s", diff)
	}
}

// fields parses dpkg-deb -f output: "Key: value" lines, continuation lines
// appended with a newline.
func fields(s string) map[string]string {
	f := map[string]string{}
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") && last != "" {
			f[last] += "\n" + strings.TrimPrefix(line, " ")
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if ok {
			last = k
			f[k] = strings.TrimSpace(v)
		}
	}
	return f
}

func TestControlFields(t *testing.T) {
	_, version := packages(t)
	for _, p := range want {
		t.Run(p.String(), func(t *testing.T) {
			f := fields(dpkgDeb(t, "-f", debPath(t, p)))
			wantF := map[string]string{
				"Package": p.name, "Version": version, "Architecture": p.arch,
				"Section": "net", "Priority": "optional",
				"Maintainer": "Torpor developers <torpor@torpor-dev.invalid>",
				"Homepage":   "https://github.com/torpor-dev/torpor",
			}
			switch p.name {
			case "torpor-agent":
				wantF["Depends"] = "torporctl (= " + version + ")"
			case "torpor-relay":
				wantF["Recommends"] = "torporctl (= " + version + ")"
			}
			for k, v := range wantF {
				if f[k] != v {
					t.Errorf("%s: %s = %q, want %q", p, k, f[k], v)
				}
			}
			for _, k := range []string{"Depends", "Recommends", "Pre-Depends", "Conflicts"} {
				if _, ok := wantF[k]; !ok && f[k] != "" {
					t.Errorf("%s: unexpected %s: %q", p, k, f[k])
				}
			}
			desc := strings.Split(f["Description"], "\n")
			if len(desc) < 2 || desc[0] == "" || !strings.Contains(f["Description"], p.name) {
				t.Errorf("%s: Description = %q, want a synopsis and a long description naming %s", p, f["Description"], p.name)
			}
			if f["Installed-Size"] == "" || f["Installed-Size"] == "0" {
				t.Errorf("%s: Installed-Size = %q", p, f["Installed-Size"])
			}
		})
	}
}

// entry is one line of dpkg-deb -c.
type entry struct{ perm, owner string }

// contents lists p's files: path -> permissions and owner, directories
// ending in "/".
func contents(t testing.TB, p pkg) map[string]entry {
	t.Helper()
	m := map[string]entry{}
	for _, line := range strings.Split(strings.TrimSpace(dpkgDeb(t, "-c", debPath(t, p))), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("dpkg-deb -c line %q", line)
		}
		m[strings.TrimPrefix(f[5], ".")] = entry{f[0], f[1]}
	}
	return m
}

// wantFiles are the files (not directories) of each package and their
// permissions; every one is owned by root/root.
var wantFiles = map[string]map[string]string{
	"torpor-agent": {
		"/usr/bin/torpor-agent":                        "-rwxr-xr-x",
		"/usr/lib/systemd/system/torpor-agent.service": "-rw-r--r--",
		"/usr/lib/sysusers.d/torpor-agent.conf":        "-rw-r--r--",
		"/usr/lib/tmpfiles.d/torpor-agent.conf":        "-rw-r--r--",
		"/usr/lib/udev/rules.d/60-torpor-agent.rules":  "-rw-r--r--",
		"/etc/torpor/agent.json":                       "-rw-r-----",
	},
	"torpor-relay": {
		"/usr/bin/torpor-relay":                               "-rwxr-xr-x",
		"/usr/lib/systemd/system/torpor-relay.service":        "-rw-r--r--",
		"/usr/lib/sysusers.d/torpor-relay.conf":               "-rw-r--r--",
		"/usr/lib/tmpfiles.d/torpor-relay.conf":               "-rw-r--r--",
		"/etc/torpor/relay.conf":                              "-rw-r-----",
		"/usr/share/torpor-relay/grafana/torpor-fleet.json":   "-rw-r--r--",
		"/usr/share/torpor-relay/prometheus/torpor-rules.yml": "-rw-r--r--",
	},
	"torporctl": {
		"/usr/bin/torporctl": "-rwxr-xr-x",
	},
}

// wantDocs are the files every package ships under /usr/share/doc/<name>/:
// the README, each page of docs/ that it links to, and the copyright file.
func wantDocs(t *testing.T, name string) map[string]string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := "/usr/share/doc/" + name + "/"
	m := map[string]string{dir + "README.md": "-rw-r--r--", dir + "copyright": "-rw-r--r--"}
	for _, l := range regexp.MustCompile(`\]\((docs/[a-z0-9-]+\.md)\)`).FindAllStringSubmatch(string(readme), -1) {
		m[dir+l[1]] = "-rw-r--r--"
	}
	if len(m) < 10 {
		t.Fatalf("README.md links %d pages of docs/; the pattern no longer finds them", len(m)-2)
	}
	return m
}

func TestFileList(t *testing.T) {
	for _, p := range want {
		t.Run(p.String(), func(t *testing.T) {
			got := map[string]string{}
			for path, e := range contents(t, p) {
				if e.owner != "root/root" {
					t.Errorf("%s: %s owned by %s, want root/root", p, path, e.owner)
				}
				if strings.HasSuffix(path, "/") {
					if e.perm != "drwxr-xr-x" {
						t.Errorf("%s: directory %s is %s, want drwxr-xr-x", p, path, e.perm)
					}
					continue
				}
				got[path] = e.perm
			}
			files := wantDocs(t, p.name)
			for k, v := range wantFiles[p.name] {
				files[k] = v
			}
			if diff := cmp.Diff(files, got); diff != "" {
				t.Errorf("%s: files and modes (-want +got):\n%s", p, diff)
			}
		})
	}
}

func TestConffilesAndScripts(t *testing.T) {
	root := repoRoot(t)
	tests := []struct {
		name      string
		conffiles string
		scripts   map[string]string // control member -> packaging/scripts file
	}{
		{"torpor-agent", "/etc/torpor/agent.json\n", map[string]string{
			"preinst": "preinst-cpu.sh", "postinst": "agent-postinst.sh", "prerm": "prerm.sh", "postrm": "postrm.sh"}},
		{"torpor-relay", "/etc/torpor/relay.conf\n", map[string]string{
			"postinst": "relay-postinst.sh", "prerm": "prerm.sh", "postrm": "postrm.sh"}},
		{"torporctl", "", map[string]string{"preinst": "preinst-cpu.sh"}},
	}
	for _, tt := range tests {
		for _, p := range want {
			if p.name != tt.name {
				continue
			}
			t.Run(p.String(), func(t *testing.T) {
				dir := control(t, p)
				conf, err := os.ReadFile(filepath.Join(dir, "conffiles"))
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				if string(conf) != tt.conffiles {
					t.Errorf("%s: conffiles = %q, want %q", p, conf, tt.conffiles)
				}
				for _, member := range []string{"preinst", "postinst", "prerm", "postrm"} {
					got, err := os.ReadFile(filepath.Join(dir, member))
					src, ok := tt.scripts[member]
					if !ok {
						if err == nil {
							t.Errorf("%s: unexpected %s", p, member)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s: %s: %v", p, member, err)
						continue
					}
					wantB, err := os.ReadFile(filepath.Join(root, "packaging", "scripts", src))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, wantB) {
						t.Errorf("%s: %s differs from packaging/scripts/%s", p, member, src)
					}
					if fi, err := os.Stat(filepath.Join(dir, member)); err != nil || fi.Mode().Perm() != 0o755 {
						t.Errorf("%s: %s mode %v, %v; want 0755", p, member, fi.Mode(), err)
					}
				}
			})
		}
	}
}

// TestCopyright checks each package's copyright file: the machine-readable
// format, Torpor's Apache-2.0 licence, and one paragraph for every Go
// module linked into the package's binary (go version -m on the binary
// the package holds), with a licence named.
func TestCopyright(t *testing.T) {
	testenv.RequireTool(t, "go")
	for _, p := range want {
		t.Run(p.String(), func(t *testing.T) {
			root := extract(t, p)
			c, err := os.ReadFile(filepath.Join(root, "usr", "share", "doc", p.name, "copyright"))
			if err != nil {
				t.Fatal(err)
			}
			text := string(c)
			if !strings.HasPrefix(text, "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n") ||
				!strings.Contains(text, "\nFiles: *\nCopyright: 2026 The Torpor developers\nLicense: Apache-2.0\n") {
				t.Errorf("%s: copyright does not open with the format line and Torpor's licence:\n%.400s", p, text)
			}
			out, err := exec.Command("go", "version", "-m", filepath.Join(root, "usr", "bin", p.name)).Output()
			if err != nil {
				t.Fatalf("go version -m: %v", err)
			}
			n := 0
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				if len(f) < 3 || f[0] != "dep" {
					continue
				}
				n++
				para := "\nFiles: go-modules/" + f[1] + "\nComment: Go module " + f[1] + " " + f[2] + ", linked into the binaries.\nCopyright: see the licence text\nLicense: "
				if !strings.Contains(text, para) {
					t.Errorf("%s: copyright has no paragraph for %s %s", p, f[1], f[2])
				}
			}
			if n < 5 {
				t.Errorf("%s: go version -m listed %d modules; want the binary's dependencies", p, n)
			}
		})
	}
}
