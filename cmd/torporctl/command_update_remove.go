package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/internal/atomicfile"
)

// runUpdateDropTarget signs the next targets version without the targets
// --name names and prints the SHA-256 of their blobs (and their deltas'):
// once that version is published, a tenant's operator removes those
// blobs with update remove (docs/tenants.md, "Update repositories").
func runUpdateDropTarget(e *env, fs *flag.FlagSet, args []string) error {
	dir := fs.String("dir", "", "The owner's update directory.")
	var names []string
	fs.Func("name", "A target to leave out of the next targets version (repeatable).", func(s string) error {
		names = append(names, s)
		return nil
	})
	expires := fs.Duration("expires", 90*24*time.Hour, "How long this targets version is valid.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || len(names) == 0 || fs.NArg() != 0 {
		return usageError{"drop-target --dir D --name NAME [--name NAME ...] [--expires D]"}
	}
	d := updateDir(*dir)
	targets, err := d.targets()
	if err != nil {
		return fmt.Errorf("update drop-target: %v", err)
	}
	var shas []string
	for _, name := range names {
		tf, ok := targets.Signed.Targets[name]
		if !ok {
			return fmt.Errorf("update drop-target: targets.json has no target %q", name)
		}
		shas = append(append(shas, tf.Hashes["sha256"].String()), deltasOf(tf)...)
		delete(targets.Signed.Targets, name)
	}
	targets.Signed.Version++
	targets.Signed.Expires = time.Now().Add(*expires).UTC()
	b, err := d.signTargets(targets)
	if err == nil {
		err = atomicfile.WriteFile(d.path("targets.json"), b, 0o644)
	}
	if err != nil {
		return fmt.Errorf("update drop-target: %v", err)
	}
	slices.Sort(shas)
	fmt.Fprintf(e.stdout, "signed targets version %d without %s; once it is published, its blobs can be removed:\n", targets.Signed.Version, strings.Join(names, ", "))
	for _, sha := range slices.Compact(shas) {
		fmt.Fprintf(e.stdout, "  --sha256 %s\n", sha)
	}
	return nil
}

// runUpdateRemove removes blobs from a tenant's update repository on a
// hosted relay, as an operator its owner named (docs/tenants.md, "Update
// repositories"): each --sha256 in turn, stopping at the first the relay
// refuses (a blob the current targets name: 409 blob_named).
func runUpdateRemove(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	relayURL := fs.String("relay", envOr("TORPOR_RELAY", "http://127.0.0.1:8080"), "The relay's public origin. Default $TORPOR_RELAY.")
	keyPath := fs.String("key", os.Getenv("TORPOR_KEY"), "Your operator key file; the tenant's owner must name its DID. Default $TORPOR_KEY.")
	tenant := fs.String("tenant", "", "The tenant's owner DID: the blob is removed from that tenant's update repository.")
	var shas []string
	fs.Func("sha256", "A blob to remove, by its SHA-256 in lower-case hex (repeatable); the current targets must not name it.", func(s string) error {
		shas = append(shas, s)
		return nil
	})
	var scale float64
	timeScaleFlag(fs, &scale)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *keyPath == "" || *tenant == "" || len(shas) == 0 || fs.NArg() != 0 {
		return usageError{"remove --tenant DID --sha256 HEX [--sha256 HEX ...] --key KEY [--relay URL]"}
	}
	api, err := updateAPI(ctx, *relayURL, *keyPath, scale)
	if err != nil {
		return fmt.Errorf("update remove: %v", err)
	}
	for _, sha := range shas {
		ans, err := api.RemoveTenantBlob(ctx, *tenant, sha)
		if err != nil {
			return fmt.Errorf("update remove %s: %v", sha, err)
		}
		fmt.Fprintf(e.stdout, "removed blob %s (%d bytes); the tenant's repository holds %d blob bytes\n", ans.SHA256, ans.Removed, ans.UpdateBytes)
	}
	return nil
}
