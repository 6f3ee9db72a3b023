//go:build integration

package packages

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/runtime/conffile"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// unit is a parsed unit file: "Section.Key" -> every value, in order.
type unit map[string][]string

func parseUnit(b []byte) unit {
	u := unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = strings.Trim(line, "[]")
		default:
			k, v, _ := strings.Cut(line, "=")
			u[section+"."+k] = append(u[section+"."+k], v)
		}
	}
	return u
}

func (u unit) last(key string) string {
	v := u[key]
	if len(v) == 0 {
		return "<unset>"
	}
	return v[len(v)-1]
}

// unitOf returns the unit file installed by package name (its arm64
// build, which both the agent and the relay have) and checks that it is
// the one in packaging/systemd.
func unitOf(t *testing.T, name string) (unit, string) {
	t.Helper()
	root := extract(t, pkg{name: name, arch: "arm64"})
	b, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system", name+".service"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "packaging/systemd", name+".service"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, src) {
		t.Errorf("%s.service in the package differs from packaging/systemd", name)
	}
	return parseUnit(b), root
}

// anyValue in unitCommon and unitHardeningCases accepts any non-empty
// value.
const anyValue = "\x00any"

// unitCommon is what TestUnitHardening wants of every unit unless the
// unit's own case says otherwise.
var unitCommon = map[string]string{
	"Service.NoNewPrivileges": "yes", "Service.ProtectSystem": "strict", "Service.ProtectHome": "yes",
	"Service.PrivateTmp": "yes", "Service.Restart": "on-failure", "Service.RestartSec": anyValue,
	"Service.StateDirectoryMode": "0750", "Service.UMask": "0077", "Service.RestrictSUIDSGID": "yes",
	"Service.ProtectKernelModules": "yes", "Service.ProtectControlGroups": "yes",
	"Service.MemoryDenyWriteExecute": "yes", "Service.SystemCallArchitectures": "native",
	"Service.SystemCallErrorNumber": "EPERM", "Service.Type": "exec",
	"Unit.StartLimitBurst": "5", "Unit.StartLimitIntervalSec": "10min",
	"Install.WantedBy": "multi-user.target",
}

// unitHardeningCases are TestUnitHardening's units.
var unitHardeningCases = []struct {
	name string
	want map[string]string // the last value of each key; anyValue: any non-empty one
	all  map[string][]string
}{
	{"torpor-agent", map[string]string{
		"Service.User": "torpor-agent", "Service.Group": "torpor-agent", "Service.StateDirectory": "torpor",
		"Service.ExecStart":             "/usr/bin/torpor-agent --slot-launch --config=/etc/torpor/agent.json",
		"Service.SupplementaryGroups":   "gpio",
		"Service.CapabilityBoundingSet": "CAP_SYS_BOOT", "Service.AmbientCapabilities": "CAP_SYS_BOOT",
		"Service.DevicePolicy": "closed", "Service.ProtectClock": "yes",
		"Service.RestartPreventExitStatus": "65",
	}, map[string][]string{
		"Service.DeviceAllow":      {"char-gpiochip rw", "char-rtc rw"},
		"Service.SystemCallFilter": {"@system-service", "~@privileged @resources", "reboot"},
	}},
	{"torpor-relay", map[string]string{
		"Service.User": "torpor-relay", "Service.Group": "torpor-relay", "Service.StateDirectory": "torpor-relay",
		"Service.ExecStart":             "/usr/bin/torpor-relay --data-dir=%S/torpor-relay $TORPOR_RELAY_OPTS",
		"Service.EnvironmentFile":       "/etc/torpor/relay.conf",
		"Service.CapabilityBoundingSet": "", "Service.AmbientCapabilities": "",
		"Service.RestartPreventExitStatus": "65",
		"Service.PrivateDevices":           "yes", "Service.ProtectKernelTunables": "yes", "Service.ProtectClock": "yes",
	}, map[string][]string{
		"Service.SystemCallFilter": {"@system-service", "~@privileged @resources"},
	}},
}

func TestUnitHardening(t *testing.T) {
	for _, tt := range unitHardeningCases {
		t.Run(tt.name, func(t *testing.T) {
			u, _ := unitOf(t, tt.name)
			want := maps.Clone(unitCommon)
			maps.Copy(want, tt.want)
			for k, v := range want {
				got, set := u[k]
				switch {
				case !set:
					t.Errorf("%s: %s is not set", tt.name, k)
				case v == anyValue && u.last(k) == "":
					t.Errorf("%s: %s is empty", tt.name, k)
				case v != anyValue && u.last(k) != v:
					t.Errorf("%s: %s=%s, want %s", tt.name, k, got, v)
				}
			}
			for k, vs := range tt.all {
				if !slices.Equal(u[k], vs) {
					t.Errorf("%s: %s = %q, want %q", tt.name, k, u[k], vs)
				}
			}
		})
	}
}

// TestUnitsAgreeWithPackage checks that the unit's user, state directory
// and configuration agree with sysusers.d, tmpfiles.d, the default
// configuration file, the agent's configuration format and every board
// profile's data directory.
func TestUnitsAgreeWithPackage(t *testing.T) {
	for _, name := range []string{"torpor-agent", "torpor-relay"} {
		t.Run(name, func(t *testing.T) {
			u, root := unitOf(t, name)
			user, state := u.last("Service.User"), "/var/lib/"+u.last("Service.StateDirectory")
			sysusers, err := os.ReadFile(filepath.Join(root, "usr/lib/sysusers.d", name+".conf"))
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`(?m)^u ` + regexp.QuoteMeta(user) + ` - ".+" ` + regexp.QuoteMeta(state) + `$`).Match(sysusers) {
				t.Errorf("%s: sysusers.d has no user %s with home %s:\n%s", name, user, state, sysusers)
			}
			tmpfiles, err := os.ReadFile(filepath.Join(root, "usr/lib/tmpfiles.d", name+".conf"))
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`(?m)^d ` + regexp.QuoteMeta(state) + ` 0750 ` + user + ` ` + user + ` -$`).Match(tmpfiles) {
				t.Errorf("%s: tmpfiles.d does not make %s 0750 %s:\n%s", name, state, user, tmpfiles)
			}
			if name != "torpor-agent" {
				return
			}
			for _, g := range u["Service.SupplementaryGroups"] {
				if !regexp.MustCompile(`(?m)^g ` + g + ` -$`).Match(sysusers) {
					t.Errorf("sysusers.d does not make the supplementary group %s", g)
				}
			}
			checkAgentConfig(t, root, state)
		})
	}
}

func checkAgentConfig(t *testing.T, root, state string) {
	b, err := os.ReadFile(filepath.Join(root, "etc/torpor/agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := conffile.Parse(b, "agent.json")
	if err != nil {
		t.Fatalf("the packaged agent.json does not parse: %v", err)
	}
	if f.DataDir != state || filepath.Dir(f.Key) != state {
		t.Errorf("agent.json: dataDir %q, key %q; want both in the unit's state directory %s", f.DataDir, f.Key, state)
	}
	// Unconfigured on purpose: the agent must refuse to start until the
	// operator names the relay, the purposes and the handlers.
	if _, err := f.Build(); err == nil || !strings.Contains(err.Error(), "no relay URL") {
		t.Errorf("agent.json builds with error %v, want one naming the missing relay", err)
	}
	debArch := map[string]string{"arm64": "arm64", "armv7": "armhf", "armv6": "armel"}
	for _, b := range boards.All() {
		if b.DataDir != state {
			t.Errorf("board %s keeps data in %s, the package's unit in %s", b.Name, b.DataDir, state)
		}
		for _, tg := range b.Targets {
			arch, ok := debArch[tg.String()]
			if !ok || !slices.ContainsFunc(want, func(p pkg) bool { return p.name == "torpor-agent" && p.arch == arch }) {
				t.Errorf("board %s runs %s userlands, for which no torpor-agent package is built", b.Name, tg)
			}
		}
	}
}

// systemdVersion returns the major version systemd-analyze reports.
func systemdVersion(t *testing.T, analyze string) int {
	out, err := exec.Command(analyze, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		t.Fatalf("systemd-analyze --version: %q", out)
	}
	v, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("systemd-analyze --version: %q", out)
	}
	return v
}

// verifyRoot makes a root directory holding the agent and relay packages'
// files (arm64) and this machine's systemd units, for systemd-analyze
// verify --root, which checks dependencies and executables there.
func verifyRoot(t *testing.T) string {
	root := t.TempDir()
	for _, name := range []string{"torpor-agent", "torpor-relay"} {
		dpkgDeb(t, "-x", debPath(t, pkg{name: name, arch: "arm64"}), root)
	}
	if out, err := exec.Command("cp", "-rn", "/usr/lib/systemd/system/.", filepath.Join(root, "usr/lib/systemd/system")).CombinedOutput(); err != nil {
		t.Fatalf("copying systemd's units: %v %s", err, out)
	}
	return root
}

// newerKeys are the settings systemd 254 added; older versions warn that
// they ignore them, which the units accept (docs/packages.md).
var newerKeys = regexp.MustCompile(`^\S+\.service:\d+: Unknown key '(RestartSteps|RestartMaxDelaySec)' in section \[Service\], ignoring\.$`)

func TestSystemdVerify(t *testing.T) {
	analyze := testenv.RequireTool(t, "systemd-analyze")
	old := systemdVersion(t, analyze) < 254
	root := verifyRoot(t)
	unitDir := filepath.Join(root, "usr/lib/systemd/system")
	tests := []struct {
		name   string
		edit   func(string) string // applied to the agent's unit
		wantOK bool
	}{
		{"as packaged", nil, true},
		// The check can fail: a misspelt hardening line is reported.
		{"misspelt ProtectSystem", func(s string) string {
			return strings.Replace(s, "ProtectSystem=strict", "ProtectSytem=strict", 1)
		}, false},
		{"bad ExecStart", func(s string) string {
			return strings.Replace(s, "/usr/bin/torpor-agent ", "/usr/bin/torpor-agnet ", 1)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := filepath.Join(unitDir, "torpor-agent.service")
			orig, err := os.ReadFile(agent)
			if err != nil {
				t.Fatal(err)
			}
			if tt.edit != nil {
				if err := os.WriteFile(agent, []byte(tt.edit(string(orig))), 0o644); err != nil {
					t.Fatal(err)
				}
				defer os.WriteFile(agent, orig, 0o644)
			}
			out, err := exec.Command(analyze, "verify", "--root="+root, "torpor-agent.service", "torpor-relay.service").CombinedOutput()
			var complaints []string
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if line == "" || old && newerKeys.MatchString(strings.TrimPrefix(line, unitDir+"/")) {
					continue
				}
				complaints = append(complaints, line)
			}
			if ok := err == nil && len(complaints) == 0; ok != tt.wantOK {
				t.Errorf("systemd-analyze verify: err=%v, complaints:\n%s\nwant clean=%v", err, strings.Join(complaints, "\n"), tt.wantOK)
			}
		})
	}
}

// TestSecurityExposure keeps systemd-analyze security's overall exposure
// (0 best, 10 worst) of each unit at or below what was measured with
// systemd 252 when the units were written (agent 2.0, relay 1.2), plus a
// little room for other versions' scoring.
func TestSecurityExposure(t *testing.T) {
	analyze := testenv.RequireTool(t, "systemd-analyze")
	re := regexp.MustCompile(`Overall exposure level for \S+: (\d+\.\d+)`)
	for _, tt := range []struct {
		name string
		max  float64
	}{{"torpor-agent", 2.3}, {"torpor-relay", 1.5}} {
		t.Run(tt.name, func(t *testing.T) {
			root := extract(t, pkg{name: tt.name, arch: "arm64"})
			out, err := exec.Command(analyze, "security", "--offline=yes", "--no-pager",
				filepath.Join(root, "usr/lib/systemd/system", tt.name+".service")).CombinedOutput()
			m := re.FindSubmatch(out)
			if err != nil || m == nil {
				t.Fatalf("systemd-analyze security: %v\n%s", err, out)
			}
			got, _ := strconv.ParseFloat(string(m[1]), 64)
			t.Logf("%s exposure %.1f", tt.name, got)
			if got > tt.max {
				t.Errorf("%s: exposure %.1f, want at most %.1f:\n%s", tt.name, got, tt.max, out)
			}
		})
	}
}
