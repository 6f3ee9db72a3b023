package conffile

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"periph.io/x/conn/v3/gpio"

	"github.com/torpor-dev/torpor/boards/boardtest"
	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
)

// TestBoardAuto: "auto" reads the device tree's model and picks the
// profile; an unknown board falls back to the architecture's generic
// profile, except a Raspberry Pi, whose generic fallback would wake by an
// RTC it does not have.
func TestBoardAuto(t *testing.T) {
	defer func(p string) { modelPath = p }(modelPath)
	for _, tt := range []struct {
		model, want, err string
	}{
		{"Raspberry Pi 4 Model B Rev 1.5", "rpi-4", ""},
		{"Raspberry Pi Zero Rev 1.3", "rpi-zero-w", ""},
		{"linux,dummy-virt", "qemu-virt", ""},
		{"Raspberry Pi 9 Model Z Rev 1.0", "", `"Raspberry Pi 9 Model Z Rev 1.0" is a Raspberry Pi with no profile`},
		{"Pine64 RockPro64 v2.1", map[string]string{"arm": "generic-armv7", "arm64": "generic-arm64"}[goruntime.GOARCH], "no generic profile for GOARCH=" + goruntime.GOARCH},
	} {
		modelPath = boardtest.ModelFile(t, tt.model)
		for _, name := range []string{"auto", ""} {
			b, err := (&File{Board: name}).board()
			switch {
			case tt.want != "" && (err != nil || b.Name != tt.want):
				t.Errorf("model %q, board %q: %s, %v; want %s", tt.model, name, b.Name, err, tt.want)
			case tt.want == "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("model %q, board %q: %s, %v; want an error containing %q", tt.model, name, b.Name, err, tt.err)
			}
		}
	}
	// A named board is taken as named, whatever the model says.
	if b, err := (&File{Board: "rpi-5"}).board(); err != nil || b.Name != "rpi-5" {
		t.Errorf(`board "rpi-5": %s, %v`, b.Name, err)
	}
	if _, err := (&File{Board: "rpi-6"}).board(); err == nil {
		t.Error(`board "rpi-6" accepted`)
	}
}

// TestWakeGPIOLine: the file's wake.edge and wake.pull reach the gpio
// method's line; absent, wake/board's default (a pulled-up falling edge)
// applies; anything else is an error naming the member.
func TestWakeGPIOLine(t *testing.T) {
	for _, tt := range []struct {
		wake string
		edge gpio.Edge
		pull gpio.Pull
		err  string
	}{
		{`{"methods": ["gpio"]}`, gpio.NoEdge, gpio.PullNoChange, ""},
		{`{"methods": ["gpio"], "edge": "rising", "pull": "down"}`, gpio.RisingEdge, gpio.PullDown, ""},
		{`{"methods": ["gpio"], "edge": "both", "pull": "float"}`, gpio.BothEdges, gpio.Float, ""},
		{`{"methods": ["gpio"], "edge": "falling", "pull": "up"}`, gpio.FallingEdge, gpio.PullUp, ""},
		{`{"methods": ["gpio"], "edge": "up", "pull": "up"}`, 0, 0, `wake: edge "up" (want falling, rising or both)`},
		{`{"methods": ["gpio"], "edge": "rising", "pull": "high"}`, 0, 0, `wake: pull "high" (want up, down or float)`},
		{`{"methods": ["gpio"], "edge": "rising"}`, 0, 0, `wake: edge and pull go together (for a button to ground, neither; for a sensor that drives the line high, "edge": "rising", "pull": "down")`},
	} {
		p := filepath.Join(t.TempDir(), "agent.json")
		if err := os.WriteFile(p, []byte(`{"version": 1, "board": "rpi-4", "wake": `+tt.wake+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := Load(p)
		if err != nil {
			t.Fatalf("Load(%s): %v", tt.wake, err)
		}
		_, bc, err := f.wakeConfig(clock.Real)
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("%s: %v, want %q", tt.wake, err, tt.err)
		case tt.err == "" && (err != nil || bc.GPIO.Edge != tt.edge || bc.GPIO.Pull != tt.pull):
			t.Errorf("%s: edge %v pull %v (%v), want %v %v", tt.wake, bc.GPIO.Edge, bc.GPIO.Pull, err, tt.edge, tt.pull)
		}
	}
}

// TestTimerNeedsNoBoard: naming only the timer wake method, with no board,
// works on a machine with no device tree and no generic profile (amd64):
// the agent gets the runtime's timer on its clock and no board is looked
// for.
func TestTimerNeedsNoBoard(t *testing.T) {
	defer func(p string) { modelPath = p }(modelPath)
	modelPath = filepath.Join(t.TempDir(), "no-device-tree", "model")
	dir := t.TempDir()
	k, _ := did.NewKeyFromSeed(make([]byte, 32))
	keyFile := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(keyFile, k, false); err != nil {
		t.Fatal(err)
	}
	f := &File{Version: Version, Key: keyFile, DataDir: dir, Relay: "http://127.0.0.1:28417", Wake: &Wake{Methods: []string{"timer"}},
		Purposes: []string{"comms:*"}, Handlers: []Handler{{Purpose: "comms:*", Exec: &ExecHandler{Path: "/bin/true"}}}}
	b, err := f.Build()
	if err != nil {
		t.Fatalf(`Build(wake.methods ["timer"], no board) = %v, want no board needed`, err)
	}
	b.Close()
	if b.Config.Schedule.Sources != nil {
		t.Errorf("sources %v, want none: the runtime's timer on the clock", b.Config.Schedule.Sources)
	}
	// Another method still needs a board, which this machine lacks unless
	// an ARM one has a generic profile.
	if goruntime.GOARCH == "arm" || goruntime.GOARCH == "arm64" {
		return
	}
	f.Wake.Methods = []string{"gpio"}
	if b, err := f.Build(); err == nil {
		b.Close()
		t.Error(`Build(wake.methods ["gpio"], no board, no device tree) succeeded`)
	}
}

// TestTrustedTimeRTC: the agent always judges expiry by trusted time, and
// trusts an RTC only where the board profile has one (or the configuration
// names a HAT's).
func TestTrustedTimeRTC(t *testing.T) {
	dir := t.TempDir()
	k, _ := did.NewKeyFromSeed(make([]byte, 32))
	keyFile := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(keyFile, k, false); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		board, hat, want string
	}{{"", "", ""}, {"qemu-virt", "", "rtc0"}, {"rpi-4", "", ""}, {"rpi-4", "rtc1", "rtc1"}} {
		f := &File{Version: Version, Key: keyFile, DataDir: dir, Relay: "http://127.0.0.1:28417", Board: tt.board,
			Wake:     &Wake{Methods: []string{"timer"}, RTC: tt.hat},
			Purposes: []string{"comms:*"}, Handlers: []Handler{{Purpose: "comms:*", Exec: &ExecHandler{Path: "/bin/true"}}}}
		b, err := f.Build()
		if err != nil {
			t.Fatalf("board %q: %v", tt.board, err)
		}
		b.Close()
		if tc := b.Config.TrustedTime; tc == nil || tc.RTC != tt.want || tc.Clock != b.Config.Clock {
			t.Errorf("board %q rtc %q: trusted time %+v, want RTC %q on the agent's clock", tt.board, tt.hat, tc, tt.want)
		}
	}
}
