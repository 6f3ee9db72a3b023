package conffile

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/wake"
)

func TestLoadAbsentVersusInvalid(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "none.json")); !errors.Is(err, ErrNoConfig) {
		t.Fatalf("Load(missing) = %v, want ErrNoConfig", err)
	}
	tests := []struct{ name, body string }{
		{"syntax", `{"version": 1,`},
		{"no version", `{}`},
		{"version 2", `{"version": 2}`},
		{"unknown member", `{"version": 1, "purpose": []}`},
		{"bad duration", `{"version": 1, "window": {"length": 5}}`},
	}
	for _, tt := range tests {
		p := filepath.Join(dir, tt.name+".json")
		os.WriteFile(p, []byte(tt.body), 0o600)
		_, err := Load(p)
		if err == nil || errors.Is(err, ErrNoConfig) {
			t.Errorf("Load(%s) = %v, want an invalid-file error", tt.name, err)
		}
	}
}

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	k, _ := did.NewKeyFromSeed(make([]byte, 32))
	keyFile := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(keyFile, k, false); err != nil {
		t.Fatal(err)
	}
	f, err := Parse([]byte(`{"version": 1, "key": "`+keyFile+`", "dataDir": "`+dir+`", "relay": "http://r",
		"mode": "sleep", "window": {"length": "10m", "offset": "-30s"}, "scheduledWake": "2026-01-15T15:00:00Z",
		"purposes": ["comms:*"], "notify": "at-least-once", "timeScale": 60,
		"bounds": {"maxPerPeer": 5, "maxPeerBytes": 65536, "maxBytes": 262144},
		"handlers": [{"purpose": "comms:*", "exec": {"path": "/bin/true"}},
		             {"purpose": "x:*", "unix": {"socket": "/run/x.sock", "timeout": "5s"}}]}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := b.Config
	switch {
	case c.Key.DID() != k.DID(), c.Schedule.Mode != wake.Sleep, c.Schedule.WindowLength != 10*time.Minute, c.Schedule.WindowOffset != -30*time.Second:
		t.Errorf("config %+v", c)
	case !c.Schedule.ScheduledWake.Equal(time.Date(2026, 1, 15, 15, 0, 0, 0, time.UTC)), c.Notify != drain.AtLeastOnce:
		t.Errorf("schedule/notify %+v", c)
	case len(c.Routes) != 2 || c.Routes[0].Name != "exec:/bin/true" || c.Routes[1].Name != "unix:/run/x.sock":
		t.Errorf("routes %+v", c.Routes)
	case !c.Consequential.Match("action:pay"):
		t.Errorf("consequential default %v, want action:*", c.Consequential)
	case c.MLS.OpenMLS == nil:
		t.Error("no MLS sessions")
	case c.Relay.Bounds.MaxPerPeer != 5 || c.Relay.Bounds.MaxPeerBytes != 65536 || c.Relay.Bounds.MaxBytes != 262144:
		t.Errorf("bounds %+v", c.Relay.Bounds)
	}
	if _, ok := c.Clock.(interface{ Factor() float64 }); !ok {
		t.Errorf("clock %T, want a scaled clock for timeScale 60", c.Clock)
	}
}

func TestBuildMQTT(t *testing.T) {
	dir := t.TempDir()
	k, _ := did.NewKeyFromSeed(make([]byte, 32))
	op, _ := did.NewKeyFromSeed(append(make([]byte, 31), 7))
	keyFile := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(keyFile, k, false); err != nil {
		t.Fatal(err)
	}
	base := `"version": 1, "key": "` + keyFile + `", "dataDir": "` + dir + `", "relay": "http://r", "purposes": ["comms:*"],
		"handlers": [{"purpose": "comms:*", "exec": {"path": "/bin/true"}}]`
	tests := []struct {
		name, mqtt string
		want       bool // Commands configured
	}{
		{"absent", ``, false},
		{"no broker", `, "mqtt": {"name": "pi-7"}`, false},
		{"full", `, "mqtt": {"broker": "mqtts://b.example:8883", "name": "pi-7", "prefix": "farm/v1",
			"operators": ["` + op.DID().String() + `"], "sessionExpiry": "48h"}`, true},
	}
	for _, tt := range tests {
		f, err := Parse([]byte("{"+base+tt.mqtt+"}"), tt.name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.Build()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		b.Close()
		if (b.Commands != nil) != tt.want {
			t.Fatalf("%s: Commands = %+v, want configured %v", tt.name, b.Commands, tt.want)
		}
		if c := b.Commands; c != nil && (c.Broker != "mqtts://b.example:8883" || c.Name != "pi-7" || c.Prefix != "farm/v1" ||
			len(c.Operators) != 1 || c.Operators[0] != op.DID() || c.SessionExpiry != 48*time.Hour) {
			t.Errorf("%s: Commands = %+v", tt.name, c)
		}
		if b.Config.Store.KeyFile != keyFile {
			t.Errorf("%s: KeyFile = %q, want %q (key rotation rewrites it)", tt.name, b.Config.Store.KeyFile, keyFile)
		}
	}
}

// TestBuildTimeScale: an absent timeScale (0) and 1 are real time, 60 is a
// scaled clock, and anything outside [1, 100000] is an error, never
// quietly real time.
func TestBuildTimeScale(t *testing.T) {
	dir := t.TempDir()
	k, _ := did.NewKeyFromSeed(make([]byte, 32))
	keyFile := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(keyFile, k, false); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scale   float64
		scaled  bool
		wantErr string
	}{
		{0, false, ""},
		{1, false, ""},
		{60, true, ""},
		{100000, true, ""},
		{0.5, false, "timeScale (or --time-scale): time scale 0.5 is out of range: want a number from 1 (real time) to 100000"},
		{-1, false, "time scale -1 is out of range"},
		{1e9, false, "time scale 1e+09 is out of range"},
		{math.NaN(), false, "time scale NaN is out of range"},
		{math.Inf(1), false, "time scale +Inf is out of range"},
	}
	for _, tt := range tests {
		f := &File{Version: Version, Key: keyFile, DataDir: dir, Relay: "http://r", TimeScale: tt.scale,
			Purposes: []string{"comms:*"}, Handlers: []Handler{{Purpose: "comms:*", Exec: &ExecHandler{Path: "/bin/true"}}}}
		b, err := f.Build()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Build(timeScale %v) = %v, want error %q", tt.scale, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Build(timeScale %v) = %v", tt.scale, err)
			continue
		}
		b.Close()
		if _, scaled := b.Config.Clock.(*clock.Scaled); scaled != tt.scaled {
			t.Errorf("Build(timeScale %v): clock %T, want scaled=%v", tt.scale, b.Config.Clock, tt.scaled)
		}
	}
}

// TestBuildTimeEpoch: timeEpoch sets the instant at which the scaled
// clock equals real time; one that is neither RFC 3339 nor Unix seconds
// is an error naming the field.
func TestBuildTimeEpoch(t *testing.T) {
	dir := t.TempDir()
	k, _ := did.NewKeyFromSeed(make([]byte, 32))
	keyFile := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(keyFile, k, false); err != nil {
		t.Fatal(err)
	}
	file := func(epoch string) *File {
		return &File{Version: Version, Key: keyFile, DataDir: dir, Relay: "http://r", TimeScale: 100, TimeEpoch: epoch,
			Purposes: []string{"comms:*"}, Handlers: []Handler{{Purpose: "comms:*", Exec: &ExecHandler{Path: "/bin/true"}}}}
	}
	b, err := file("2026-12-03T18:00:00.5Z").Build()
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	sc, ok := b.Config.Clock.(*clock.Scaled)
	if want := time.Date(2026, 12, 3, 18, 0, 0, 5e8, time.UTC); !ok || !sc.Epoch().Equal(want) {
		t.Fatalf("clock %T %v, want a scaled clock with epoch %v", b.Config.Clock, b.Config.Clock, want)
	}
	_, err = file("18:00").Build()
	if err == nil || !strings.Contains(err.Error(), `timeEpoch (or --time-epoch): time epoch "18:00": want an RFC 3339 time`) {
		t.Errorf("Build(timeEpoch 18:00) = %v, want an error naming timeEpoch", err)
	}
}

// TestBuildRelayURL: the relay must be an http or https origin; a host and
// port without a scheme, or a URL with a path, is refused at start with
// the right form, not dialled until the window ends.
func TestBuildRelayURL(t *testing.T) {
	dir := t.TempDir()
	k, _ := did.NewKeyFromSeed(make([]byte, 32))
	keyFile := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(keyFile, k, false); err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"http://127.0.0.1:28417":        "",
		"https://relay.example.org/":    "",
		"127.0.0.1:28417":               `"relay" (or --relay) must be an origin such as https://relay.example.org, not "127.0.0.1:28417": it has no scheme`,
		"https://relay.example.org/a2a": "it has a path",
		"ws://relay.example.org":        `the scheme is "ws"`,
	}
	for relay, wantErr := range tests {
		f := &File{Version: Version, Key: keyFile, DataDir: dir, Relay: relay,
			Purposes: []string{"comms:*"}, Handlers: []Handler{{Purpose: "comms:*", Exec: &ExecHandler{Path: "/bin/true"}}}}
		b, err := f.Build()
		if err == nil {
			b.Close()
		}
		if (err == nil) != (wantErr == "") || err != nil && !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Build(relay %q) = %v, want error %q", relay, err, wantErr)
		}
	}
}
