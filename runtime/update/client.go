package update

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/internal/diskspace"
	"github.com/torpor-dev/torpor/runtime/update/tuf"
)

// ErrNotFound is what a Source returns for a file the repository does not
// have (the end of the root chain, TUF specification Section 5.3.3).
var ErrNotFound = errors.New("update: not in the repository")

// Source is the relay's repository as the device reaches it over its link.
type Source interface {
	// Metadata returns the metadata file name ("timestamp.json",
	// "2.root.json", "5.snapshot.json", "5.targets.json"), or ErrNotFound;
	// more than max bytes is an error.
	Metadata(ctx context.Context, name string, max int64) ([]byte, error)
	// Fresh asks the relay for a timestamp signed now: the device's
	// trusted one has expired (it slept past it).
	Fresh(ctx context.Context) error
	// Blob returns at most n bytes of the blob whose SHA-256 is sha256
	// (lower-case hex), from offset off.
	Blob(ctx context.Context, sha256 string, off, n int64) ([]byte, error)
}

// The bounds on metadata sizes (TUF specification Section 5.3.3, 5.4.1,
// 5.5.1, 5.6.1: "download ... up to some X number of bytes").
const (
	MaxRootBytes      = 512 << 10
	MaxTimestampBytes = 16 << 10
	MaxSnapshotBytes  = 2 << 20
	MaxTargetsBytes   = 4 << 20
	// MaxRootRotations bounds the root versions one check walks.
	MaxRootRotations = 32
)

// Config is what a Client needs.
type Config struct {
	// Dir keeps the trusted metadata and the downloads. It must hold
	// root.json, the root the device was provisioned with.
	Dir string
	// Source reaches the relay's repository.
	Source Source
	// Device is the hardware the agent runs on.
	Device Device
	// Installed is the version of the running build (Custom.Version).
	Installed uint64
	// Type is the Custom.Type of the targets this check considers: ""
	// for torpor-agent's builds, TypeRauc for operating-system bundles
	// (Installed is then the bundle version rauc last installed).
	Type string
	// Now is the device's trusted time (runtime/trusted's Clock.Trusted).
	Now func() (time.Time, error)
	// Budget bounds the blob bytes one Check downloads; 0 means
	// DefaultBudget.
	Budget int64
	// Supply returns the supply voltage in millivolts, and false where
	// the board does not report it.
	Supply func() (mv int64, ok bool)
	// Running is the path of the build the device runs (its binary):
	// a target with a delta from that build is fetched as the delta
	// (Custom.Deltas). Empty: every target is fetched whole.
	Running string
	// Flash returns the free bytes of dir's file system (ok false when
	// it cannot tell); nil means statfs(2) (flash_linux.go).
	Flash func(dir string) (free, total uint64, ok bool)
	// Offer, when set, is the target a rollout offers: Check takes that
	// target and no other (chooseOffered). Without one it takes the
	// newest target for the device.
	Offer *Offer
}

// DefaultBudget is the blob bytes a Check downloads when Config.Budget is 0.
const DefaultBudget = 1 << 20

// Result is a verified file for a target, or (Path "") nothing to do.
// For a gzip target Path is the decompressed file, decompressed from the
// verified one.
type Result struct {
	// Target is the target's path in the repository; Path the verified
	// file on the device, whose length and hashes are the target's.
	Target string
	Path   string
	Custom Custom
	// UpToDate is true when no target is newer than Installed (with an
	// Offer: the offered one is the installed version).
	UpToDate bool
	// Rollout is the id of the rollout that offered the target; "" when
	// the check had no offer.
	Rollout string
	// Bytes counts the blob bytes this Check downloaded.
	Bytes int64
	// AwaitsConfirmation is true for a verified file of a target whose
	// Custom.Confirm says the owner must confirm the install: the caller
	// holds it for the owner instead of installing it (the runtime keeps
	// it as a held action, docs/updates.md "Owner confirmation").
	AwaitsConfirmation bool
	// SHA256 is the target's hash (hex), Expires the expiry of the
	// targets metadata that lists it: a hold for the owner ends there.
	SHA256  string
	Expires time.Time
}

// Client checks the relay's repository for an update.
type Client struct {
	cfg Config
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Dir == "" || cfg.Source == nil || cfg.Now == nil {
		return nil, errors.New("update: Config needs Dir, Source and Now")
	}
	if cfg.Budget == 0 {
		cfg.Budget = DefaultBudget
	}
	if cfg.Flash == nil {
		cfg.Flash = diskspace.Of
	}
	c := &Client{cfg: cfg}
	for _, d := range []string{filepath.Join(cfg.Dir, "meta"), c.sub("part"), c.sub("verified")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Check runs the TUF client workflow (TUF specification Section 5) against
// the relay and downloads at most Config.Budget bytes of the target for
// this device. The error, when not nil, is a *Refusal.
func (c *Client) Check(ctx context.Context) (Result, error) {
	now, err := c.cfg.Now()
	if err != nil {
		return Result{}, refuse(NoTime, err, "the device cannot judge expiry")
	}
	t, rerr := c.refresh(ctx, now)
	if rerr != nil {
		return Result{}, rerr
	}
	var (
		target *tuf.TargetFile
		custom Custom
		res    Result
	)
	if c.cfg.Offer != nil {
		target, custom, res, rerr = c.chooseOffered(t.Targets, c.cfg.Offer)
	} else {
		target, custom, res, rerr = c.choose(t.Targets)
	}
	if rerr != nil || target == nil {
		return res, asError(rerr)
	}
	res = Result{Target: target.Path, Custom: custom, Rollout: res.Rollout, SHA256: target.Hashes["sha256"].String(),
		Expires: t.Targets.Signed.Expires}
	if rerr := c.conditions(target.Path, custom, now); rerr != nil {
		return res, rerr
	}
	path, n, rerr := c.fetchTarget(ctx, target, custom)
	res.Bytes = n
	if rerr == nil && custom.Encoding == EncodingGzip {
		path, rerr = c.decompress(target.Path, path, custom.Size)
	}
	if rerr != nil {
		return res, rerr
	}
	res.Path, res.AwaitsConfirmation = path, custom.Confirm
	return res, nil
}

// asError keeps a nil *Refusal from becoming a non-nil error.
func asError(r *Refusal) error {
	if r == nil {
		return nil
	}
	return r
}

// refresh loads the trusted metadata, then the relay's newer metadata:
// root (Section 5.3), timestamp (5.4), snapshot (5.5), targets (5.6).
func (c *Client) refresh(ctx context.Context, now time.Time) (*tuf.Trusted, *Refusal) {
	root, err := os.ReadFile(c.meta("root.json"))
	if err != nil {
		return nil, refuse(Invalid, err, "the trusted root")
	}
	t, err := tuf.New(root, now.UTC()) // Section 5.1: the time, here the trusted one
	if err != nil {
		return nil, refuse(Invalid, err, "the trusted root")
	}
	if r := c.rootChain(ctx, t); r != nil {
		return nil, r
	}
	if r := c.timestamp(ctx, t); r != nil {
		return nil, r
	}
	if r := c.snapshot(ctx, t); r != nil {
		return nil, r
	}
	if r := c.targets(ctx, t); r != nil {
		return nil, r
	}
	return t, nil
}

// rootChain walks root versions N+1, N+2, ... (Section 5.3). The
// timestamp and snapshot kept from earlier wakes are then loaded under the
// final root: when it rotated their keys they no longer verify and are
// not used, which is the fast-forward recovery of Section 5.3.11.
func (c *Client) rootChain(ctx context.Context, t *tuf.Trusted) *Refusal {
	for range MaxRootRotations {
		name := fmt.Sprintf("%d.root.json", t.Root.Signed.Version+1)
		b, err := c.fetch(ctx, name, MaxRootBytes)
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			return classify(tuf.RoleRoot, err, false)
		}
		if _, err := t.UpdateRoot(b); err != nil {
			return classify(tuf.RoleRoot, err, false)
		}
		if err := atomicfile.WriteFile(c.meta("root.json"), b, 0o600); err != nil {
			return refuse(Invalid, err, "keeping root version %d", t.Root.Signed.Version)
		}
	}
	if t.Root.Signed.IsExpired(t.RefTime) {
		return refuse(Expired, nil, "root version %d expired at %s", t.Root.Signed.Version, stamp(t.Root.Signed.Expires))
	}
	return nil
}

// timestamp loads the trusted timestamp, then the relay's (Section 5.4).
// One that has expired by the trusted time makes the device ask the relay
// for a fresh one in the same wake.
func (c *Client) timestamp(ctx context.Context, t *tuf.Trusted) *Refusal {
	if b, err := os.ReadFile(c.meta("timestamp.json")); err == nil {
		_, _ = t.UpdateTimestamp(b) // an expired one still guards against a rollback
	}
	err := c.fetchTimestamp(ctx, t)
	if !errors.Is(err, tuf.ErrExpired) || t.Timestamp == nil {
		return classifyOrNil(tuf.RoleTimestamp, err, true)
	}
	was := t.Timestamp.Signed.Expires
	if ferr := c.cfg.Source.Fresh(ctx); ferr != nil {
		return refuse(Expired, ferr, "the timestamp expired at %s and the relay had no fresh one", stamp(was))
	}
	err = c.fetchTimestamp(ctx, t)
	if errors.Is(err, tuf.ErrExpired) {
		return refuse(Expired, err, "the timestamp expired at %s and the relay's fresh one too", stamp(was))
	}
	return classifyOrNil(tuf.RoleTimestamp, err, true)
}

func (c *Client) fetchTimestamp(ctx context.Context, t *tuf.Trusted) error {
	b, err := c.fetch(ctx, "timestamp.json", MaxTimestampBytes)
	if err != nil {
		return err
	}
	_, err = t.UpdateTimestamp(b)
	if errors.Is(err, tuf.ErrEqualVersion) {
		// Section 5.4.3.2: the trusted one stays; judge its expiry.
		if t.Timestamp.Signed.IsExpired(t.RefTime) {
			return fmt.Errorf("%w: the trusted timestamp version %d", tuf.ErrExpired, t.Timestamp.Signed.Version)
		}
		return nil
	}
	if err != nil {
		return err
	}
	return c.keep("timestamp.json", b)
}

// snapshot loads the trusted snapshot, then the relay's unless the
// trusted one is the version the timestamp names (Section 5.5).
func (c *Client) snapshot(ctx context.Context, t *tuf.Trusted) *Refusal {
	if b, err := os.ReadFile(c.meta("snapshot.json")); err == nil {
		if _, err := t.UpdateSnapshot(b, true); err == nil {
			return nil
		}
	}
	before := t.Snapshot
	v := t.Timestamp.Signed.Meta[tuf.SnapshotFile].Version
	b, err := c.fetch(ctx, t.Root.Signed.FileName(v, tuf.SnapshotFile), MaxSnapshotBytes)
	if err == nil {
		_, err = t.UpdateSnapshot(b, false)
	}
	if err != nil {
		// A version error before the new snapshot is loaded is a
		// rollback of a role it lists; after, a version that is not
		// the timestamp's.
		return classify(tuf.RoleSnapshot, err, t.Snapshot == before)
	}
	return asRefusal(c.keep("snapshot.json", b))
}

// targets loads the top-level targets the snapshot names (Section 5.6).
func (c *Client) targets(ctx context.Context, t *tuf.Trusted) *Refusal {
	if b, err := os.ReadFile(c.meta("targets.json")); err == nil {
		if _, err := t.UpdateTargets(b); err == nil {
			return nil
		}
	}
	meta := t.Snapshot.Signed.Meta[tuf.TargetsFile]
	if meta == nil {
		return refuse(Invalid, nil, "snapshot version %d does not name %s", t.Snapshot.Signed.Version, tuf.TargetsFile)
	}
	b, err := c.fetch(ctx, t.Root.Signed.FileName(meta.Version, tuf.TargetsFile), MaxTargetsBytes)
	if err == nil {
		_, err = t.UpdateTargets(b)
	}
	if err != nil {
		return classify(tuf.RoleTargets, err, false)
	}
	return asRefusal(c.keep("targets.json", b))
}

func (c *Client) fetch(ctx context.Context, name string, max int64) ([]byte, error) {
	b, err := c.cfg.Source.Metadata(ctx, name, max)
	if errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, &fetchError{err}
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %s: %d bytes, more than %d", tuf.ErrLengthOrHash, name, len(b), max)
	}
	return b, nil
}

func (c *Client) keep(name string, b []byte) error {
	if err := atomicfile.WriteFile(c.meta(name), b, 0o600); err != nil {
		return refuse(Invalid, err, "keeping %s", name)
	}
	return nil
}

func (c *Client) meta(name string) string { return filepath.Join(c.cfg.Dir, "meta", name) }

func asRefusal(err error) *Refusal {
	if err == nil {
		return nil
	}
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return refuse(Invalid, err, "update")
}

func classifyOrNil(role string, err error, versionIsFreeze bool) *Refusal {
	if err == nil {
		return nil
	}
	return classify(role, err, versionIsFreeze)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
