package main

import (
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/internal/tufsign"
)

// The owner's update repository directory (docs/updates.md, "Key
// ceremony"): keys/<role>-<n>.key (did key files, 0600), root.json and
// N.root.json (the signed roots), targets.json (the signed targets),
// blobs/<sha256> (the targets' bytes, kept until published).
func init() {
	register(&subcommand{
		name:  "update",
		args:  "keys init|keys add|keys revoke|keys relay|sign-target|drop-target|publish|remove|rollout ...",
		short: "Agent updates: the owner's TUF keys and roots, signed targets, uploads to the relay, removals from a tenant's repository; an operator's staged rollouts.",
		run:   runUpdate,
	})
}

func runUpdate(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	switch {
	case len(args) >= 2 && args[0] == "keys" && args[1] == "init":
		return runUpdateKeysInit(e, fs, args[2:])
	case len(args) >= 2 && args[0] == "keys" && (args[1] == "add" || args[1] == "revoke"):
		return runUpdateKeysChange(e, fs, args[1], args[2:])
	case len(args) >= 2 && args[0] == "keys" && args[1] == "relay":
		return runUpdateKeysRelay(e, fs, args[2:])
	case len(args) >= 1 && args[0] == "sign-target":
		return runUpdateSignTarget(e, fs, args[1:])
	case len(args) >= 1 && args[0] == "publish":
		return runUpdatePublish(ctx, e, fs, args[1:])
	case len(args) >= 1 && args[0] == "drop-target":
		return runUpdateDropTarget(e, fs, args[1:])
	case len(args) >= 1 && args[0] == "remove":
		return runUpdateRemove(ctx, e, fs, args[1:])
	case len(args) >= 1 && args[0] == "rollout":
		return runUpdateRollout(ctx, e, fs, args[1:])
	}
	return usageError{"want keys init, keys add, keys revoke, keys relay, sign-target, drop-target, publish, remove or rollout"}
}

// updateDir is the owner's repository directory.
type updateDir string

func (d updateDir) path(parts ...string) string {
	return filepath.Join(append([]string{string(d)}, parts...)...)
}

// newKey writes a new key file keys/<role>-<n>.key and returns it.
func (d updateDir) newKey(role string) (*did.PrivateKey, string, error) {
	if err := os.MkdirAll(d.path("keys"), 0o700); err != nil {
		return nil, "", err
	}
	k, err := did.Generate(nil)
	if err != nil {
		return nil, "", err
	}
	for n := 1; ; n++ {
		p := d.path("keys", fmt.Sprintf("%s-%d.key", role, n))
		if _, err := os.Stat(p); err == nil {
			continue
		}
		return k, p, saveKey(p, k, false)
	}
}

// keys loads every key file of role.
func (d updateDir) keys(role string) ([]*did.PrivateKey, error) {
	paths, _ := filepath.Glob(d.path("keys", role+"-*.key"))
	var out []*did.PrivateKey
	for _, p := range paths {
		k, err := loadKey(p)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s key in %s", role, d.path("keys"))
	}
	return out, nil
}

// privs returns the Ed25519 keys of ks.
func privs(ks []*did.PrivateKey) []ed25519.PrivateKey {
	out := make([]ed25519.PrivateKey, len(ks))
	for i, k := range ks {
		out[i] = k.Ed25519()
	}
	return out
}

// writeRoot signs root with every root key file in the directory (the
// old root's keys and the new one's, TUF specification Section 5.3.4,
// 5.3.5) and writes root.json and N.root.json.
func (d updateDir) writeRoot(root *metadata.Metadata[metadata.RootType]) ([]byte, error) {
	ks, err := d.keys(metadata.ROOT)
	if err != nil {
		return nil, err
	}
	b, err := tufsign.Sign(root, privs(ks)...)
	if err != nil {
		return nil, err
	}
	if err := root.VerifyDelegate(metadata.ROOT, root); err != nil {
		return nil, fmt.Errorf("root version %d does not meet its own threshold with the keys in %s: %w", root.Signed.Version, d.path("keys"), err)
	}
	if err := atomicfile.WriteFile(d.path(fmt.Sprintf("%d.root.json", root.Signed.Version)), b, 0o644); err != nil {
		return nil, err
	}
	return b, atomicfile.WriteFile(d.path("root.json"), b, 0o644)
}

func (d updateDir) root() (*metadata.Metadata[metadata.RootType], error) {
	return metadata.Root().FromFile(d.path("root.json"))
}

// relayKey parses a did:key naming one of the relay's online keys.
func relayKey(flagName, s string) (ed25519.PublicKey, error) {
	if s == "" {
		return nil, fmt.Errorf("%s is required: the did:key of the relay's key file (torporctl keygen prints it)", flagName)
	}
	d, err := did.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", flagName, err)
	}
	return d.PublicKey(), nil
}

func runUpdateKeysInit(e *env, fs *flag.FlagSet, args []string) error {
	dir := fs.String("dir", "", "The owner's update directory (created; keep it offline).")
	rootKeys := fs.Int("root-keys", 1, "How many root keys to generate.")
	rootThreshold := fs.Int("root-threshold", 1, "How many root keys must sign a root.")
	targetsKeys := fs.Int("targets-keys", 1, "How many targets keys to generate.")
	targetsThreshold := fs.Int("targets-threshold", 1, "How many targets keys must sign targets.")
	snapshot := fs.String("relay-snapshot", "", "The did:key of the relay's --update-snapshot-key.")
	timestamp := fs.String("relay-timestamp", "", "The did:key of the relay's --update-timestamp-key.")
	expires := fs.Duration("expires", 365*24*time.Hour, "How long the root is valid.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() != 0 {
		return usageError{"keys init takes --dir and no arguments"}
	}
	d := updateDir(*dir)
	if _, err := os.Stat(d.path("root.json")); err == nil {
		return fmt.Errorf("update keys init: %s exists; keys add and keys revoke change a root", d.path("root.json"))
	}
	roles := tufsign.Roles{RootThreshold: *rootThreshold, TargetsThreshold: *targetsThreshold}
	var err error
	if roles.Snapshot, err = relayKey("--relay-snapshot", *snapshot); err != nil {
		return err
	}
	if roles.Timestamp, err = relayKey("--relay-timestamp", *timestamp); err != nil {
		return err
	}
	for _, r := range []struct {
		role string
		n    int
		into *[]ed25519.PublicKey
	}{{metadata.ROOT, *rootKeys, &roles.Root}, {metadata.TARGETS, *targetsKeys, &roles.Targets}} {
		for range r.n {
			k, p, err := d.newKey(r.role)
			if err != nil {
				return fmt.Errorf("update keys init: %v", err)
			}
			*r.into = append(*r.into, k.Public())
			fmt.Fprintf(e.stdout, "%s key %s: %s\n", r.role, p, k.DID())
		}
	}
	root, err := tufsign.NewRoot(roles, time.Now().Add(*expires))
	if err != nil {
		return fmt.Errorf("update keys init: %v", err)
	}
	if _, err := d.writeRoot(root); err != nil {
		return fmt.Errorf("update keys init: %v", err)
	}
	fmt.Fprintf(e.stdout, "wrote %s (version 1): provision devices with it and upload it with torporctl update publish --root\n", d.path("root.json"))
	return nil
}

// runUpdateKeysChange is "keys add --role R" (a new key for R) and "keys
// revoke --role R DID" (the key DID no longer signs for R): each writes
// the next root version, signed by the old and the new root keys.
func runUpdateKeysChange(e *env, fs *flag.FlagSet, op string, args []string) error {
	dir := fs.String("dir", "", "The owner's update directory.")
	role := fs.String("role", "", "root or targets.")
	threshold := fs.Int("threshold", 0, "The role's new threshold; 0 keeps it.")
	expires := fs.Duration("expires", 365*24*time.Hour, "How long the new root is valid.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || (*role != metadata.ROOT && *role != metadata.TARGETS) || (op == "revoke") != (fs.NArg() == 1) {
		return usageError{"keys add --dir D --role root|targets; keys revoke --dir D --role root|targets DID"}
	}
	d := updateDir(*dir)
	root, err := d.root()
	if err != nil {
		return fmt.Errorf("update keys %s: %v", op, err)
	}
	if err := changeKeys(e, d, root, op, *role, fs.Arg(0)); err != nil {
		return fmt.Errorf("update keys %s: %v", op, err)
	}
	if *threshold > 0 {
		root.Signed.Roles[*role].Threshold = *threshold
	}
	root.Signed.Version++
	root.Signed.Expires = time.Now().Add(*expires).UTC()
	if _, err := d.writeRoot(root); err != nil {
		return fmt.Errorf("update keys %s: %v", op, err)
	}
	if op == "revoke" && *role == metadata.ROOT {
		retireKeyFile(d, fs.Arg(0))
	}
	fmt.Fprintf(e.stdout, "wrote %s (version %d): upload it with torporctl update publish --root\n", d.path("root.json"), root.Signed.Version)
	return nil
}

// runUpdateKeysRelay is "keys relay": the next root names other keys of
// the relay for the snapshot and timestamp roles (the relay's keys were
// replaced). The relay, started with the new keys, signs again what is
// published when it takes this root.
func runUpdateKeysRelay(e *env, fs *flag.FlagSet, args []string) error {
	dir := fs.String("dir", "", "The owner's update directory.")
	snapshot := fs.String("relay-snapshot", "", "The did:key of the relay's new --update-snapshot-key.")
	timestamp := fs.String("relay-timestamp", "", "The did:key of the relay's new --update-timestamp-key.")
	expires := fs.Duration("expires", 365*24*time.Hour, "How long the new root is valid.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() != 0 {
		return usageError{"keys relay --dir D --relay-snapshot DID --relay-timestamp DID"}
	}
	d := updateDir(*dir)
	root, err := d.root()
	if err != nil {
		return fmt.Errorf("update keys relay: %v", err)
	}
	for role, s := range map[string]string{metadata.SNAPSHOT: *snapshot, metadata.TIMESTAMP: *timestamp} {
		if err := replaceRoleKey(root, role, s); err != nil {
			return fmt.Errorf("update keys relay: %v", err)
		}
	}
	root.Signed.Version++
	root.Signed.Expires = time.Now().Add(*expires).UTC()
	if _, err := d.writeRoot(root); err != nil {
		return fmt.Errorf("update keys relay: %v", err)
	}
	fmt.Fprintf(e.stdout, "wrote %s (version %d): start the relay with its new keys, then torporctl update publish --root %d\n",
		d.path("root.json"), root.Signed.Version, root.Signed.Version)
	return nil
}

// replaceRoleKey makes the did:key s the only key of role, threshold 1.
func replaceRoleKey(root *metadata.Metadata[metadata.RootType], role, s string) error {
	pub, err := relayKey("--relay-"+role, s)
	if err != nil {
		return err
	}
	key, err := metadata.KeyFromPublicKey(pub)
	if err != nil {
		return err
	}
	for _, id := range slices.Clone(root.Signed.Roles[role].KeyIDs) {
		if err := root.Signed.RevokeKey(id, role); err != nil {
			return err
		}
	}
	root.Signed.Roles[role].Threshold = 1
	return root.Signed.AddKey(key, role)
}

func changeKeys(e *env, d updateDir, root *metadata.Metadata[metadata.RootType], op, role, who string) error {
	if op == "add" {
		k, p, err := d.newKey(role)
		if err != nil {
			return err
		}
		key, err := metadata.KeyFromPublicKey(k.Public())
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s key %s: %s\n", role, p, k.DID())
		return root.Signed.AddKey(key, role)
	}
	gone, err := did.Parse(who)
	if err != nil {
		return err
	}
	key, err := metadata.KeyFromPublicKey(gone.PublicKey())
	if err != nil {
		return err
	}
	id, err := key.ID()
	if err != nil {
		return err
	}
	if r := root.Signed.Roles[role]; len(r.KeyIDs) <= r.Threshold && slices.Contains(r.KeyIDs, id) {
		return fmt.Errorf("revoking it would leave %d %s keys for a threshold of %d: add one first", len(r.KeyIDs)-1, role, r.Threshold)
	}
	if role == metadata.TARGETS {
		defer retireKeyFile(d, who)
	}
	return root.Signed.RevokeKey(id, role)
}

// retireKeyFile renames the key file of who to .retired: it signs no
// more, but the owner keeps it until the devices took the new root.
func retireKeyFile(d updateDir, who string) {
	paths, _ := filepath.Glob(d.path("keys", "*.key"))
	for _, p := range paths {
		if k, err := loadKey(p); err == nil && k.DID().String() == who {
			os.Rename(p, strings.TrimSuffix(p, ".key")+".retired")
		}
	}
}
