package main

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/relay"
)

// updateArgs are the flags of the update repository (docs/updates.md).
type updateArgs struct {
	snapshotKey, timestampKey string
	maxBytes                  int64
}

func (u *updateArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&u.snapshotKey, "update-snapshot-key", "", "The key file (torporctl keygen) the relay signs its update repository's snapshots with; the owner's root names its public key. With --update-timestamp-key it hosts the repository in updates.db of --data-dir.")
	fs.StringVar(&u.timestampKey, "update-timestamp-key", "", "The key file the relay signs its update repository's timestamps with (a day's validity, re-signed past half of it).")
	fs.Int64Var(&u.maxBytes, "updates-max-bytes", updaterepo.DefaultMaxBytes, "The most bytes of metadata and targets the update repository holds.")
}

// open opens the update repository into cfg when both keys are given and
// returns what closes it.
func (u *updateArgs) open(cfg *relay.Config, dataDir string, clk clock.Clock) (func(), error) {
	if u.snapshotKey == "" && u.timestampKey == "" {
		return func() {}, nil
	}
	if u.snapshotKey == "" || u.timestampKey == "" {
		return nil, errors.New("--update-snapshot-key and --update-timestamp-key go together")
	}
	snap, err := did.LoadKey(u.snapshotKey)
	if err != nil {
		return nil, fmt.Errorf("--update-snapshot-key: %w", err)
	}
	ts, err := did.LoadKey(u.timestampKey)
	if err != nil {
		return nil, fmt.Errorf("--update-timestamp-key: %w", err)
	}
	repo, err := updaterepo.Open(updaterepo.Config{Path: filepath.Join(dataDir, "updates.db"), MaxBytes: u.maxBytes,
		Snapshot: snap.Ed25519(), Timestamp: ts.Ed25519(), Clock: clk})
	if err != nil {
		return nil, err
	}
	cfg.Stores.Updates = repo
	return func() { repo.Close() }, nil
}
