// Package conffile reads torpor-agent's configuration file and turns it,
// with the command line's overrides, into a runtime.Config.
//
// The file is JSON (the standard library reads it; the agent binary stays
// small) and carries a "version" member, now 1, so that a later format can
// be told apart rather than misread. A file that does not exist is
// reported as ErrNoConfig (wrapped), distinct from a file that exists but
// is invalid, whose error is not wrapped: an operator who pointed the agent
// at a wrong path learns that, and an operator whose file has a typo
// learns where.
//
//	{
//	  "version": 1,
//	  "key": "/var/lib/torpor/agent.key",
//	  "dataDir": "/var/lib/torpor",
//	  "relay": "https://relay.example",
//	  "mode": "hourly_wake",
//	  "window": {"length": "5m", "offset": "40s"},
//	  "owner": "did:key:z6Mk…",
//	  "purposes": ["comms:*", "action:*"],
//	  "consequential": ["action:*"],
//	  "notify": "at-most-once",
//	  "handlers": [
//	    {"purpose": "comms:*", "exec": {"path": "/usr/local/bin/on-message", "timeout": "30s"}},
//	    {"purpose": "action:*", "unix": {"socket": "/run/app/actions.sock", "path": "/actions"}},
//	    {"purpose": "sensor:*", "mqtt": {"broker": "mqtt://127.0.0.1:1883", "topic": "torpor/{purpose}"}}
//	  ],
//	  "board": "rpi5",
//	  "wake": {"methods": ["rtc", "gpio-keys"]},
//	  "mqtt": {"broker": "mqtt://broker.example:1883", "name": "pi-7",
//	           "operators": ["did:key:z6Mk…"]}
//	}
//
// "mqtt" starts the operators' management channel (manage.Commands): the
// agent takes signed commands on the broker while it is awake; the name
// defaults to the agent's DID. Without a broker there is none.
//
// "board" names a profile of package boards ("auto" detects it from
// /proc/device-tree/model, falling back to the generic profile of the
// architecture); with neither a board nor wake methods the agent waits on
// a timer, as a mains-powered gateway or a demonstration does.
//
// Durations are Go duration strings ("5m", "30s"). Unknown members are
// errors: a misspelt option must not be silently ignored; so is a member
// given twice, at any depth (encoding/json would keep the last). Every
// number has a range (bounds.go: keyPackages 0..256, batchSize 0..1000,
// window length 1s..1h, maxLifetime and bounds.ttl up to 30 days, handler
// timeouts up to an hour), and handler paths (exec path and dir, unix
// socket) must be absolute; Build names the member and the range of each
// value outside.
package conffile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/torpor-dev/torpor/internal/canon"
	"github.com/torpor-dev/torpor/internal/jsonpos"
)

// Version is the format version this package reads.
const Version = 1

// ErrNoConfig is returned (wrapped) by Load when the file does not exist.
var ErrNoConfig = errors.New("conffile: no configuration file")

// File is the configuration file.
type File struct {
	Version        int        `json:"version"`
	Key            string     `json:"key,omitempty"`
	DataDir        string     `json:"dataDir,omitempty"`
	Relay          string     `json:"relay,omitempty"`
	Enrolment      string     `json:"enrolment,omitempty"` // file: the owner's enrolment (torporctl enrol)
	Name           string     `json:"name,omitempty"`
	Board          string     `json:"board,omitempty"`
	Mode           string     `json:"mode,omitempty"`
	Window         Window     `json:"window"`
	ScheduledWake  string     `json:"scheduledWake,omitempty"` // RFC 3339, sleep mode
	Owner          string     `json:"owner,omitempty"`
	Purposes       []string   `json:"purposes,omitempty"`
	Consequential  []string   `json:"consequential,omitempty"`
	AllowPlaintext bool       `json:"allowPlaintext,omitempty"`
	MaxLifetime    Duration   `json:"maxLifetime,omitempty"`
	Notify         string     `json:"notify,omitempty"`
	Handlers       []Handler  `json:"handlers,omitempty"`
	Wake           *Wake      `json:"wake,omitempty"`
	Bounds         *Bounds    `json:"bounds,omitempty"`
	BatchSize      int        `json:"batchSize,omitempty"`
	TimeScale      float64    `json:"timeScale,omitempty"`
	TimeEpoch      string     `json:"timeEpoch,omitempty"` // RFC 3339 or Unix seconds (clock.ParseEpoch)
	KeyPackages    int        `json:"keyPackages,omitempty"`
	Log            *LogConfig `json:"log,omitempty"`
	MQTT           *MQTT      `json:"mqtt,omitempty"`
	Health         *Health    `json:"health,omitempty"`
	Update         *Update    `json:"update,omitempty"`
}

// Health names health sources for the signed status (runtime/health)
// instead of the board profile's (boards.Health): a battery's power
// supply on a generic board, another WiFi interface or thermal zone.
type Health struct {
	// Supply is an absolute sysfs path: a power supply's voltage_now or
	// voltage_avg (µV), or a hwmon in*_input (mV).
	Supply string `json:"supply,omitempty"`
	// WiFi is the wireless interface /proc/net/wireless reports.
	WiFi string `json:"wifi,omitempty"`
	// ThermalZone is the type of the CPU's thermal zone.
	ThermalZone string `json:"thermalZone,omitempty"`
}

// MQTT is the operators' management channel over MQTT (manage.Commands,
// docs/mqtt.md). Without a broker the agent takes no operators' commands.
type MQTT struct {
	// Broker is the MQTT 5 broker URL (mqtt://host:port, mqtts://...).
	Broker string `json:"broker,omitempty"`
	// Name is the device's topic level and MQTT client id; empty means
	// the agent's DID. Name devices that rotate keys: the broker keeps
	// the session (and commands sent while asleep) under the name.
	Name string `json:"name,omitempty"`
	// Prefix is the topic prefix; empty means "torpor/v1".
	Prefix string `json:"prefix,omitempty"`
	// Operators are the DIDs whose signed commands the agent carries
	// out; at least one is required with a broker.
	Operators []string `json:"operators,omitempty"`
	// SessionExpiry is how long the broker keeps the session while the
	// device sleeps (default 30 days); it must exceed the longest sleep.
	SessionExpiry Duration `json:"sessionExpiry,omitempty"`
	// PasswordFile holds a static MQTT password for an external broker
	// that checks passwords (torporctl mqtt acl); without it the agent
	// authenticates with DID Bearer tokens, as the embedded broker wants.
	PasswordFile string `json:"passwordFile,omitempty"`
}

// Window is the hourly window.
type Window struct {
	Length Duration `json:"length,omitempty"`
	Offset Duration `json:"offset,omitempty"`
}

// Handler routes the purposes matching Purpose to one hand-off.
type Handler struct {
	Purpose string       `json:"purpose"`
	Name    string       `json:"name,omitempty"`
	Exec    *ExecHandler `json:"exec,omitempty"`
	Unix    *UnixHandler `json:"unix,omitempty"`
	MQTT    *MQTTHandler `json:"mqtt,omitempty"`
}

// ExecHandler runs a program per object (runtime/deliver.Exec).
type ExecHandler struct {
	Path    string   `json:"path"`
	Args    []string `json:"args,omitempty"`
	Env     []string `json:"env,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	Timeout Duration `json:"timeout,omitempty"`
}

// UnixHandler posts each object to a Unix socket (runtime/deliver.Unix).
type UnixHandler struct {
	Socket  string   `json:"socket"`
	Path    string   `json:"path,omitempty"`
	Timeout Duration `json:"timeout,omitempty"`
}

// MQTTHandler publishes each object (runtime/deliver.MQTT).
type MQTTHandler struct {
	Broker   string `json:"broker"`
	Topic    string `json:"topic"`
	ClientID string `json:"clientId,omitempty"`
}

// Wake chooses the wake sources (package wake/board): the methods of the
// board profile to use (timer, gpio, rtc, rtc-poweroff, gpio-keys,
// poweroff-gpio; empty means the board's default), the RTC device when it
// is not the board's own (an RTC HAT), how to arm it (sysfs or ioctl), and
// for the gpio method the edge that wakes (falling, rising or both) and the
// line's bias (up, down or float), both or neither. Neither means a
// pulled-up falling edge, a button to ground; a sensor that drives the line
// high wants "edge": "rising", "pull": "down".
type Wake struct {
	Methods   []string `json:"methods,omitempty"`
	RTC       string   `json:"rtc,omitempty"`
	RTCMethod string   `json:"rtcMethod,omitempty"`
	Edge      string   `json:"edge,omitempty"`
	Pull      string   `json:"pull,omitempty"`
}

// Bounds are the queue bounds the agent asks the relay for.
type Bounds struct {
	MaxMessages    int      `json:"maxMessages,omitempty"`
	MaxPerPeer     int      `json:"maxPerPeer,omitempty"`
	MaxPeerBytes   int64    `json:"maxPeerBytes,omitempty"`
	MaxBytes       int64    `json:"maxBytes,omitempty"`
	MaxMessageSize int64    `json:"maxMessageSize,omitempty"`
	TTL            Duration `json:"ttl,omitempty"`
}

// LogConfig sets the log level ("debug", "info", "warn", "error").
type LogConfig struct {
	Level string `json:"level,omitempty"`
}

// Duration is a time.Duration written as a Go duration string.
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"5m\": %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Load reads and checks the file at path. It returns an error wrapping
// ErrNoConfig when the file does not exist, and an unwrapped error when it
// exists but cannot be read as a version-1 configuration.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoConfig, path)
	}
	if err != nil {
		return nil, fmt.Errorf("conffile: %v", err)
	}
	return Parse(b, path)
}

// Parse reads a configuration; name is used in errors.
func Parse(b []byte, name string) (*File, error) {
	var probe struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("conffile: %s: %v", name, jsonpos.Describe(b, err))
	}
	if err := canon.NoDuplicates(b); err != nil {
		return nil, fmt.Errorf("conffile: %s: %v (a member given twice would silently keep only the last)", name, err)
	}
	if probe.Version == nil {
		return nil, fmt.Errorf("conffile: %s: no \"version\" member (this agent reads version %d)", name, Version)
	}
	if *probe.Version != Version {
		return nil, fmt.Errorf("conffile: %s: version %d, this agent reads version %d", name, *probe.Version, Version)
	}
	var f File
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("conffile: %s: %v", name, jsonpos.Describe(b, err))
	}
	return &f, nil
}
