package main

import (
	"context"
	"flag"
	"fmt"
	"os"
)

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
