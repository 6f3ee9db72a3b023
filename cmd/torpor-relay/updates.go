package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/relay"
)

// updateArgs are the flags of the update repository (docs/updates.md).
type updateArgs struct {
	snapshotKey, timestampKey string
	maxBytes                  int64
}

func (u *updateArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&u.snapshotKey, "update-snapshot-key", "", "The key file (torporctl keygen) the relay signs its update repository's snapshots with; the owner's root names its public key. With --update-timestamp-key it hosts the repository: in updates.db of --data-dir, or with --store jetstream in JetStream, shared by every relay of the cluster (each given the same two key files).")
	fs.StringVar(&u.timestampKey, "update-timestamp-key", "", "The key file the relay signs its update repository's timestamps with (a day's validity, re-signed past half of it).")
	fs.Int64Var(&u.maxBytes, "updates-max-bytes", updaterepo.DefaultMaxBytes, "The most bytes of metadata and targets the update repository holds (with --store jetstream, the cluster's: give every relay the same); with --tenants, each tenant's repository is bounded by it too, and by the tenant's updateBytes quota.")
}

// open opens the update repository into cfg when both keys are given and
// returns what closes it: updates.db in dataDir, or on JetStream (js not
// nil) the cluster's (store/jsstore's Updates).
func (u *updateArgs) open(ctx context.Context, cfg *relay.Config, dataDir string, js *jsstore.Conn, clk clock.Clock) (func(), error) {
	if u.snapshotKey == "" && u.timestampKey == "" {
		return func() {}, nil
	}
	if u.snapshotKey == "" || u.timestampKey == "" {
		return nil, errors.New("--update-snapshot-key and --update-timestamp-key go together")
	}
	if u.maxBytes <= 0 {
		return nil, fmt.Errorf("--updates-max-bytes %d: want a positive number of bytes", u.maxBytes)
	}
	snap, err := did.LoadKey(u.snapshotKey)
	if err != nil {
		return nil, fmt.Errorf("--update-snapshot-key: %w", err)
	}
	ts, err := did.LoadKey(u.timestampKey)
	if err != nil {
		return nil, fmt.Errorf("--update-timestamp-key: %w", err)
	}
	rc := updaterepo.Config{Path: filepath.Join(dataDir, "updates.db"), MaxBytes: u.maxBytes,
		Snapshot: snap.Ed25519(), Timestamp: ts.Ed25519(), Clock: clk}
	var repo *updaterepo.Repo
	where := rc.Path
	if js == nil {
		repo, err = updaterepo.Open(rc)
	} else {
		repo, err = openSharedUpdates(ctx, js, rc)
		where = "JetStream, shared by the cluster's relays"
	}
	if err != nil {
		return nil, err
	}
	cfg.Stores.Updates = repo
	if cfg.Logger != nil {
		cfg.Logger.Info("update repository", "in", where, "maxBytes", rc.MaxBytes)
	}
	return func() { repo.Close() }, nil
}

// openSharedUpdates opens the cluster's update repository on js.
func openSharedUpdates(ctx context.Context, js *jsstore.Conn, rc updaterepo.Config) (*updaterepo.Repo, error) {
	b, err := js.Updates(ctx, rc.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("--store jetstream: the update repository (--update-snapshot-key): %w", err)
	}
	return updaterepo.New(rc, b)
}
