package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/internal/tufcustom"
	"github.com/torpor-dev/torpor/internal/tufsign"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// runUpdateSignTarget adds FILE to targets.json as --name, with Torpor's
// custom fields, signs the next targets version with the targets keys
// and keeps a copy of FILE in blobs/ for publish.
func runUpdateSignTarget(e *env, fs *flag.FlagSet, args []string) error {
	dir := fs.String("dir", "", "The owner's update directory.")
	name := fs.String("name", "", "The target's name, such as torpor-agent/7/linux-armv6.")
	var c tufcustom.Custom
	fs.Uint64Var(&c.Version, "version", 0, "The build's version; devices install only a newer one.")
	fs.StringVar(&c.Board, "board", "", "The board profile it fits; empty fits every board.")
	fs.StringVar(&c.GOARCH, "goarch", "arm", "The GOARCH it was built for.")
	fs.StringVar(&c.GOARM, "goarm", "", "The GOARM it was built for (6, 7), empty for arm64.")
	fs.StringVar(&c.Window, "window", "any", "When devices install it: any, or HH:MM-HH:MM UTC.")
	fs.BoolVar(&c.Confirm, "confirm", false, "Devices wait for the owner's confirmation (torporctl device confirm).")
	fs.Int64Var(&c.MinSupplyMV, "min-supply-mv", 0, "The lowest supply voltage in mV to install at, where the board reports it.")
	fs.StringVar(&c.Type, "type", "", "What FILE is: empty for a build of torpor-agent, rauc-bundle for an operating-system bundle (rauc install).")
	expires := fs.Duration("expires", 90*24*time.Hour, "How long this targets version is valid.")
	compress := fs.Bool("gzip", false, "Publish FILE gzip-compressed: devices fetch fewer bytes and decompress it once verified.")
	var from []string
	fs.Func("delta-from", "A build devices may run (repeatable): the target carries a delta from it, which devices running it fetch instead of FILE and patch their build with (not with --gzip).", func(s string) error {
		from = append(from, s)
		return nil
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *compress && len(from) > 0 {
		return usageError{"--delta-from and --gzip do not go together: a delta patches to the target itself"}
	}
	if *dir == "" || *name == "" || c.Version == 0 || fs.NArg() != 1 || (c.Type != "" && c.Type != tufcustom.TypeRauc) {
		return usageError{"sign-target --dir D --name NAME --version N [--goarch --goarm --board --window --confirm --min-supply-mv --type rauc-bundle] FILE"}
	}
	d := updateDir(*dir)
	data, err := os.ReadFile(fs.Arg(0))
	if err == nil && *compress {
		data, err = gzipTarget(data, &c)
	}
	if err == nil {
		err = d.addDeltas(e, from, data, &c)
	}
	if err != nil {
		return fmt.Errorf("update sign-target: %v", err)
	}
	targets, err := d.targets()
	if err != nil {
		return fmt.Errorf("update sign-target: %v", err)
	}
	if err := tufsign.AddTarget(targets, *name, data, tufcustom.Key, c); err != nil {
		return fmt.Errorf("update sign-target: %v", err)
	}
	targets.Signed.Version++
	targets.Signed.Expires = time.Now().Add(*expires).UTC()
	if err := d.writeTargets(targets, data, *name); err != nil {
		return fmt.Errorf("update sign-target: %v", err)
	}
	fmt.Fprintf(e.stdout, "signed targets version %d with %s (%d bytes, sha256 %s)\n", targets.Signed.Version, *name, len(data),
		targets.Signed.Targets[*name].Hashes["sha256"])
	return nil
}

// addDeltas makes a delta from each build of from to data, keeps it in
// blobs/ for publish and names it in c.
func (d updateDir) addDeltas(e *env, from []string, data []byte, c *tufcustom.Custom) error {
	for _, path := range from {
		old, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--delta-from: %w", err)
		}
		delta, err := tufsign.Delta(old, data)
		if err != nil {
			return fmt.Errorf("--delta-from %s: %w", path, err)
		}
		if len(delta) >= len(data) {
			fmt.Fprintf(e.stdout, "no delta from %s: %d bytes, not fewer than the target's %d\n", path, len(delta), len(data))
			continue
		}
		if err := os.MkdirAll(d.path("blobs"), 0o700); err != nil {
			return err
		}
		sum := sha256.Sum256(delta)
		if err := atomicfile.WriteFile(d.path("blobs", hex.EncodeToString(sum[:])), delta, 0o600); err != nil {
			return err
		}
		fromSum := sha256.Sum256(old)
		c.Deltas = append(c.Deltas, tufcustom.Delta{From: hex.EncodeToString(fromSum[:]), SHA256: hex.EncodeToString(sum[:]), Length: int64(len(delta))})
		fmt.Fprintf(e.stdout, "delta from %s: %d bytes\n", path, len(delta))
	}
	return nil
}

// gzipTarget compresses data (RFC 1952) and records its size in c.
func gzipTarget(data []byte, c *tufcustom.Custom) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	c.Encoding, c.Size = tufcustom.EncodingGzip, int64(len(data))
	return buf.Bytes(), nil
}

func (d updateDir) targets() (*metadata.Metadata[metadata.TargetsType], error) {
	t, err := metadata.Targets().FromFile(d.path("targets.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return metadata.Targets(), nil
	}
	return t, err
}

// writeTargets signs targets with the targets keys, checks the root's
// threshold is met, keeps data under blobs/ and writes targets.json.
func (d updateDir) writeTargets(targets *metadata.Metadata[metadata.TargetsType], data []byte, name string) error {
	b, err := d.signTargets(targets)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.path("blobs"), 0o700); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(d.path("blobs", targets.Signed.Targets[name].Hashes["sha256"].String()), data, 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFile(d.path("targets.json"), b, 0o644)
}

// signTargets signs targets with the targets keys and checks that the
// root's threshold is met.
func (d updateDir) signTargets(targets *metadata.Metadata[metadata.TargetsType]) ([]byte, error) {
	root, err := d.root()
	if err != nil {
		return nil, err
	}
	ks, err := d.keys(metadata.TARGETS)
	if err != nil {
		return nil, err
	}
	b, err := tufsign.Sign(targets, privs(ks)...)
	if err != nil {
		return nil, err
	}
	if err := root.VerifyDelegate(metadata.TARGETS, targets); err != nil {
		return nil, fmt.Errorf("the targets keys in %s do not meet the root's threshold: %w", d.path("keys"), err)
	}
	return b, nil
}

// runUpdatePublish uploads to the relay, as an operator: with --root the
// root.json versions the relay lacks (from --from-root), then every blob
// targets.json lists and targets.json.
func runUpdatePublish(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	dir := fs.String("dir", "", "The owner's update directory.")
	relayURL := fs.String("relay", envOr("TORPOR_RELAY", "http://127.0.0.1:8080"), "The relay's public origin. Default $TORPOR_RELAY.")
	keyPath := fs.String("key", os.Getenv("TORPOR_KEY"), "Your operator key file; the relay must list its DID (--operator). Default $TORPOR_KEY.")
	root := fs.Int64("root", 0, "Upload root versions from this one to the newest first (1 for a relay that has none).")
	tenant := fs.String("tenant", "", "On a hosted relay: the tenant's owner DID, to upload to that tenant's update repository (as an operator its owner named) instead of the relay's own (docs/tenants.md).")
	var scale float64
	timeScaleFlag(fs, &scale)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || *keyPath == "" || fs.NArg() != 0 {
		return usageError{"publish --dir D --key KEY [--relay URL] [--root N] [--tenant DID]"}
	}
	api, err := updateAPI(ctx, *relayURL, *keyPath, scale)
	if err != nil {
		return fmt.Errorf("update publish: %v", err)
	}
	put := api.PutUpdate
	if *tenant != "" {
		put = func(ctx context.Context, what string, body []byte) (operatorapi.UpdateAnswer, error) {
			return api.PutTenantUpdate(ctx, *tenant, what, body)
		}
	}
	d := updateDir(*dir)
	if err := d.publish(ctx, e, put, *root); err != nil {
		return fmt.Errorf("update publish: %v", err)
	}
	return nil
}

func updateAPI(ctx context.Context, relayURL, keyPath string, scale float64) (*operatorapi.Client, error) {
	key, err := loadKey(keyPath)
	if err != nil {
		return nil, err
	}
	aud, err := bearer.NormalizeAudience(relayURL)
	if err != nil {
		return nil, fmt.Errorf("--relay: %v", err)
	}
	clk, err := relayClock(ctx, aud, scale)
	if err != nil {
		return nil, err
	}
	return &operatorapi.Client{Origin: aud, Key: key, Clock: clk}, nil
}

// putFunc uploads one file to a relay's update repository
// (operatorapi.Client's PutUpdate, or PutTenantUpdate for a tenant's).
type putFunc func(ctx context.Context, what string, body []byte) (operatorapi.UpdateAnswer, error)

func (d updateDir) publish(ctx context.Context, e *env, api putFunc, fromRoot int64) error {
	if fromRoot > 0 {
		cur, err := d.root()
		if err != nil {
			return err
		}
		for v := fromRoot; v <= cur.Signed.Version; v++ {
			if err := d.upload(ctx, e, api, "root", d.path(fmt.Sprintf("%d.root.json", v))); err != nil {
				return err
			}
		}
	}
	targets, err := metadata.Targets().FromFile(d.path("targets.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range targets.Signed.Targets {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		if err := d.upload(ctx, e, api, "blob", d.path("blobs", targets.Signed.Targets[n].Hashes["sha256"].String())); err != nil {
			return fmt.Errorf("target %s: %w", n, err)
		}
		for _, sum := range deltasOf(targets.Signed.Targets[n]) {
			if err := d.upload(ctx, e, api, "blob", d.path("blobs", sum)); err != nil {
				return fmt.Errorf("target %s: a delta: %w", n, err)
			}
		}
	}
	return d.upload(ctx, e, api, "targets", d.path("targets.json"))
}

func (d updateDir) upload(ctx context.Context, e *env, api putFunc, what, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ans, err := api(ctx, what, b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(e.stdout, "uploaded %s (%d bytes); the relay holds %d bytes\n", path, len(b), ans.Used)
	return nil
}

// deltasOf returns the SHA-256 of each delta target t names in its
// custom fields.
func deltasOf(t *metadata.TargetFiles) []string {
	if t.Custom == nil {
		return nil
	}
	var all map[string]json.RawMessage
	var c tufcustom.Custom
	if json.Unmarshal(*t.Custom, &all) != nil || json.Unmarshal(all[tufcustom.Key], &c) != nil {
		return nil
	}
	var out []string
	for _, d := range c.Deltas {
		if len(d.SHA256) == 64 && !strings.ContainsAny(d.SHA256, "/.") {
			out = append(out, d.SHA256)
		}
	}
	return out
}
