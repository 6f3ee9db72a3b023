package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/trusted"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/runtime/update/rauc"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/sleeptime"
)

// Config configures an Agent. Fields marked optional have documented zero
// values; do not change a Config after passing it to New.
type Config struct {
	// PipelineConfig is the receive side: Key (required), Owner,
	// Purposes, Consequential, AllowPlaintext, MaxLifetime, Routes,
	// Notify, Sessions and Clock, as OpenPipeline takes them.
	PipelineConfig
	// Name is the name in the Agent Card; empty means "torpor-agent".
	Name string
	// Board is the board profile's name (boards.Board.Name), reported to
	// the relay in the signed status (link wire.Status); empty for none.
	Board string
	// Status reads what the signed status reports beyond the agent's
	// store: the board's health, the last install's outcome.
	Status StatusSources
	// Relay is the relay the agent links to. Its URL is required.
	Relay Relay
	// Store is where the agent keeps its state. Its DataDir is required.
	Store Store
	// Schedule is when the agent is reachable and what wakes it.
	Schedule Schedule
	// MLS is the KeyPackage pool the relay hands out and the sessions.
	MLS MLS

	// TrustedTime, when set, makes the agent judge Governed Object
	// expiry by time it can trust (package runtime/trusted: NTP, the
	// board's RTC, the relay's time from the link handshake, never below
	// the floor it keeps in agent.db), and hold its records without it.
	// Its Clock defaults to Clock. Nil judges expiry by Clock (tests that
	// drive a fake clock); torpor-agent always sets it (runtime/conffile).
	TrustedTime *trusted.Config

	// Logger receives the agent's logs; nil discards them.
	Logger *slog.Logger
	// Hooks are the test and metrics seams.
	Hooks Hooks
	// Management follows the duty cycle (see Management); nil means
	// none. Agent.SetManagement sets it after New, for a channel made
	// from the Agent (manage.Commands).
	Management Management
}

// Relay is the relay an Agent links to.
type Relay struct {
	// URL is the relay's public base URL, e.g. https://relay.example.
	// Required.
	URL string
	// Bounds are the queue bounds the agent asks the relay for (zero
	// members: the relay's ceiling).
	Bounds queuebounds.Bounds
	// Enrolment, when set, is the owner's enrolment of this device
	// (wire.State.Enrolment), presented in every state it publishes: a
	// relay that trusts the owner admits the device at once.
	Enrolment []byte
	// Updates, when set, makes each linked wake check the relay's update
	// repository after the drain (runtime/update, docs/updates.md) and
	// report the outcome in the signed status (wire.Status.Update).
	Updates *Updates
}

// Store is where an Agent keeps its state.
type Store struct {
	// DataDir holds the agent's bbolt file (agent.db). Required.
	DataDir string
	// KeyFile is the file Key was read from; RotateKey replaces it.
	// Empty makes key rotation impossible.
	KeyFile string
	// Reinitialise lets the agent make a new, empty store where the store
	// marker (next to KeyFile, see MarkerSuffix) says one existed and the
	// file is missing or empty; without it Run refuses (ErrStoreRefused).
	// It never touches a store that exists.
	Reinitialise bool
	// BatchSize is the number of records per drain batch (one bbolt
	// transaction each); zero means 64.
	BatchSize int
}

// Schedule is when an Agent is reachable and what wakes it.
type Schedule struct {
	// Mode is the reachability mode the agent starts in (it can be
	// changed at runtime with SetMode).
	Mode wake.Mode
	// WindowLength is the length of an hourly window; zero means
	// wake.DefaultLength. The window opens at the wake minute the relay
	// derives from the agent's DID (wake.WakeMinute), at the second of
	// that minute the relay assigned or, until it assigns one, the second
	// the agent derives from its DID (wake.WakeSecond; both spread a fleet
	// over the minute's seconds), plus WindowOffset; the agent publishes
	// the second and the offset together as its window's offset.
	WindowLength time.Duration
	// WindowOffset shifts the window within the hour, to spread a fleet.
	WindowOffset time.Duration
	// ScheduledWake is, in sleep mode, the one wake an operator planned
	// (zero: none; the agent then wakes only on an event source).
	ScheduledWake time.Time
	// Sources wake the agent; nil means a timer on Clock.
	Sources []wake.Source
}

// MLS is an Agent's KeyPackage pool and MLS sessions.
type MLS struct {
	// KeyPackages keeps the pool of KeyPackages the relay hands out
	// (package session); nil publishes none.
	KeyPackages KeyPackages
	// OpenMLS, when set and Sessions is nil, makes the MLS sessions and
	// the KeyPackage pool on the agent's bbolt file once Run opened it
	// (package runtime/sessions provides both), so that their state commits
	// in the drain's transactions.
	OpenMLS func(db *bolt.DB) (drain.Sessions, KeyPackages, error)
	// KeyPackageTarget is how many unused KeyPackages the relay should
	// hold; zero means the pool's own default.
	KeyPackageTarget int
}

// StatusSources read, once a wake, what the signed status (link
// wire.Status) reports from outside the agent's store; a nil one reports
// none.
type StatusSources struct {
	// Health reads the board's health (wire.Status.Health;
	// runtime/health's Sources.Read). A wake waits for it at most
	// HealthTimeout of real time, also under a time scale.
	Health func() *wire.StatusHealth
	// Install reads the outcome of the last install of a new agent build
	// (wire.Status.Install; runtime/update/slots's Slots.Status).
	Install func() *wire.StatusInstall
}

// Hooks are an Agent's test and metrics seams; the zero value has none.
type Hooks struct {
	// OnPhase, when set, is called as each phase of a wake completes. It
	// must not block.
	OnPhase func(Phase)
	// OnWake, when set, is called with each wake's report after it was
	// recorded. It must not block.
	OnWake func(WakeReport)
	// Dial opens the device link; nil means link.Dial.
	Dial func(ctx context.Context, cfg link.Config) (Link, error)
	// Kernel reads CLOCK_BOOTTIME for resume detection; nil means the
	// system's.
	Kernel sleeptime.Kernel
	// Rand is the source of backoff jitter; nil means crypto/rand.
	Rand io.Reader
	// FreeOSMemory is called before a sleep that keeps the process, after
	// a wake that drained records, to return the heap's free memory to the
	// kernel; nil means debug.FreeOSMemory.
	FreeOSMemory func()
	// SetGCPercent sets the garbage collector's target and returns the
	// previous one, as debug.SetGCPercent (nil means it): the agent lowers
	// it while it drains records (DrainGCPercent).
	SetGCPercent func(int) int
}

// KeyPackages is what the agent needs from its KeyPackage pool (package
// session implements it, with the private halves in bbolt).
type KeyPackages interface {
	// Refill makes sure target unused KeyPackages exist and returns the
	// MLSMessage-wrapped public halves of those the relay has not been
	// given yet (RFC 9420 Section 10; draft Section 6.1).
	Refill(ctx context.Context, target int) ([][]byte, error)
	// Published marks kps given once the relay accepted them, and every
	// published KeyPackage whose wire.KeyPackageDigest is not in held (the
	// relay's state-ok; nil when it did not say) as handed out, no longer
	// unused. It returns how many were newly found handed out.
	Published(ctx context.Context, kps [][]byte, held [][]byte) (int, error)
}

// LastResortKeyPackages is the optional capability of KeyPackages to keep
// a last-resort KeyPackage (RFC 9420, Section 16.8), which the relay hands
// out, without deleting it, while the one-use pool is empty.
type LastResortKeyPackages interface {
	// LastResort makes or replaces the last-resort KeyPackage as due and
	// returns it MLSMessage-wrapped to publish (wire.State.LastResort);
	// nil when the relay confirmed it holds it.
	LastResort(ctx context.Context) ([]byte, error)
	// LastResortHeld records the last-resort KeyPackage the relay holds:
	// the wire.KeyPackageDigest its state-ok named, nil for none.
	LastResortHeld(ctx context.Context, digest []byte) error
}

// Link is the device link as the agent uses it; *link.Client implements it.
type Link interface {
	Hello() queuebounds.Bounds
	Publish(ctx context.Context, st wire.State) (wire.Accepted, error)
	Pull(ctx context.Context, after uint64, max int) ([]wire.Record, bool, error)
	Ack(ctx context.Context, seqs []uint64) error
	Queued() <-chan uint64
	Done() <-chan struct{}
	Close() error
}

// DBFile is the name of the agent's bbolt file in DataDir.
const DBFile = "agent.db"

func (c *Config) dbPath() string { return filepath.Join(c.Store.DataDir, DBFile) }

func (c *Config) check() error {
	var errs []error
	if c.Key == nil {
		errs = append(errs, errors.New("no key"))
	}
	if c.Store.DataDir == "" {
		errs = append(errs, errors.New("no data directory"))
	}
	if c.Relay.URL == "" {
		errs = append(errs, errors.New("no relay URL"))
	}
	if !c.Schedule.Mode.Valid() {
		errs = append(errs, fmt.Errorf("mode %q", c.Schedule.Mode))
	}
	if err := safetext.Check("name", c.Name); err != nil {
		errs = append(errs, err)
	}
	if err := c.window().Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("runtime: invalid configuration: %w", errors.Join(errs...))
	}
	return nil
}

// window returns the agent's hourly window.
func (c *Config) window() wake.Window {
	w := wake.Window{Length: c.Schedule.WindowLength, Offset: c.Schedule.WindowOffset}
	if c.Key != nil {
		w.Minute, w.Second = wake.WakeMinute(c.Key.DID().String()), wake.WakeSecond(c.Key.DID().String())
	}
	return w
}

func (c *Config) batchSize() int {
	if c.Store.BatchSize <= 0 {
		return 64
	}
	return c.Store.BatchSize
}

func (c *Config) kpTarget() int { return max(c.MLS.KeyPackageTarget, 0) }

func (c *Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Updates is what a wake's update check needs (runtime/update's Config
// without its Source, which is the wake's link, and its time, which is
// the trusted time: Config.TrustedTime, else Clock).
type Updates struct {
	// Dir keeps the trusted metadata and the downloads; meta/root.json
	// is the owner's root the device was provisioned with.
	Dir string
	// Installed is the version of the running build; Device its hardware.
	Installed uint64
	Device    update.Device
	// Budget bounds the bytes one wake downloads; 0 is update.DefaultBudget.
	Budget int64
	// Running is the running build's binary, which a target's delta
	// patches (update.Config.Running); empty: targets are fetched whole.
	Running string
	// OnVerified installs a verified file of the target a rollout offered
	// (res.Rollout; a file verified without an offer is kept, not
	// installed: docs/updates.md "At a wake"), or of a held update the
	// owner confirmed (a target that needs the owner's confirmation is
	// held, offered or not: updatehold.go). torpor-agent's puts it into
	// the A/B slots (runtime/update/slots). nil, or an error it returns,
	// makes the status say why the build was not installed (refused,
	// update.Install); nil returned ends the wake after its update phase
	// and Run returns ErrRestart, so that the new build starts.
	OnVerified func(path string, res update.Result) error
	// Rauc, when set, makes each check also look for operating-system
	// bundles (targets of type rauc-bundle, after the agent's own, within
	// what is left of Budget) and hand a verified one to rauc install
	// (oscheck.go, docs/updates.md "Operating-system updates: rauc").
	Rauc *rauc.Installer
}
