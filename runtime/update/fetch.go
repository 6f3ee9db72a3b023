package update

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/runtime/update/tuf"
)

// chunk is the most bytes one Blob call asks for.
const chunk = 64 << 10

// choose picks the newest target that fits the device. It returns a nil
// target with UpToDate when none is newer than the installed version, and
// a refusal when the newest for the device is older (Rollback) or the
// newer ones are all for other hardware (Hardware).
func (c *Client) choose(targets *tuf.Metadata[tuf.Targets]) (*tuf.TargetFile, Custom, Result, *Refusal) {
	var (
		best       *tuf.TargetFile
		bestCustom Custom
		other      []string
		names      = slices.Sorted(func(yield func(string) bool) {
			for k := range targets.Signed.Targets {
				if !yield(k) {
					return
				}
			}
		})
	)
	for _, name := range names {
		t := targets.Signed.Targets[name]
		cu, err := CustomOf(t)
		if err != nil {
			return nil, cu, Result{}, refuse(Invalid, err, "targets version %d", targets.Signed.Version)
		}
		switch {
		case cu.Type != c.cfg.Type:
			continue // another check's (Config.Type)
		case !cu.Fits(c.cfg.Device):
			if cu.Version > c.cfg.Installed {
				other = append(other, fmt.Sprintf("%s (%s/%s%s)", name, orAny(cu.Board), cu.GOARCH, cu.GOARM))
			}
		case best == nil || cu.Version > bestCustom.Version:
			best, bestCustom = t, cu
		}
	}
	d := c.cfg.Device
	switch {
	case best != nil && bestCustom.Version > c.cfg.Installed:
		return best, bestCustom, Result{}, nil
	case len(other) > 0:
		return nil, bestCustom, Result{}, refuse(Hardware, nil, "newer targets %v are not for board %s, %s/%s", other, orAny(d.Board), d.GOARCH, d.GOARM)
	case best != nil && bestCustom.Version < c.cfg.Installed:
		return nil, bestCustom, Result{Target: best.Path, Custom: bestCustom}, refuse(Rollback, nil,
			"the newest target for this device, %s, is version %d, older than the installed %d", best.Path, bestCustom.Version, c.cfg.Installed)
	}
	return nil, bestCustom, Result{UpToDate: true}, nil
}

func orAny(board string) string {
	if board == "" {
		return "any board"
	}
	return board
}

// conditions judges the target's conditions at now: window and supply.
// The owner's confirmation is the caller's (Result.AwaitsConfirmation).
func (c *Client) conditions(target string, cu Custom, now time.Time) *Refusal {
	if !cu.InWindow(now) {
		return refuse(Window, nil, "%s installs in %s UTC; the trusted time is %s", target, cu.Window, stamp(now))
	}
	if cu.MinSupplyMV > 0 && c.cfg.Supply != nil {
		if mv, ok := c.cfg.Supply(); ok && mv < cu.MinSupplyMV {
			return refuse(Supply, nil, "%s needs a supply of %d mV; the board reads %d mV", target, cu.MinSupplyMV, mv)
		}
	}
	return nil
}

// download resumes the target's blob from the bytes kept from earlier
// wakes, fetches at most Config.Budget bytes, and when it is whole checks
// its length and hashes (tuf.TargetFile.VerifyLengthHashes; TUF
// specification Section 5.7.3) before it moves it to verified/.
func (c *Client) download(ctx context.Context, t *tuf.TargetFile) (string, int64, *Refusal) {
	sum := t.Hashes["sha256"].String()
	if len(sum) != 64 {
		return "", 0, refuse(Invalid, nil, "target %s has no sha256 hash", t.Path)
	}
	done := filepath.Join(c.sub("verified"), sum)
	if b, err := os.ReadFile(done); err == nil {
		if t.VerifyLengthHashes(b) == nil {
			return done, 0, nil // verified again: flash may have changed it
		}
		os.Remove(done)
	}
	part := filepath.Join(c.sub("part"), sum)
	dropOtherParts(filepath.Dir(part), sum)
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", 0, refuse(Invalid, err, "the partial download")
	}
	defer f.Close()
	n, r := c.fill(ctx, f, t, sum)
	if r != nil {
		return "", n, r
	}
	if err := c.verify(t, part, done); err != nil {
		os.Remove(part)
		return "", n, err
	}
	return done, n, nil
}

// sub is the directory of the downloads of this check's Config.Type:
// part/ and verified/ for torpor-agent, part-TYPE/ and verified-TYPE/ for
// another, so that two checks never drop each other's partial downloads.
func (c *Client) sub(name string) string {
	if c.cfg.Type == "" {
		return filepath.Join(c.cfg.Dir, name)
	}
	return filepath.Join(c.cfg.Dir, name+"-"+c.cfg.Type)
}

// dropOtherParts removes the partial downloads of other targets (one
// superseded by a newer publish), so that they do not fill the flash:
// every file whose name does not start with one of keep.
func dropOtherParts(dir string, keep ...string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !slices.ContainsFunc(keep, func(k string) bool { return strings.HasPrefix(e.Name(), k) }) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// fill appends to f what the relay has of the blob, within the budget,
// once the flash has room for the rest of it.
func (c *Client) fill(ctx context.Context, f *os.File, t *tuf.TargetFile, sum string) (int64, *Refusal) {
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, refuse(Invalid, err, "the partial download")
	}
	if off > t.Length {
		f.Truncate(0)
		return 0, refuse(EndlessData, nil, "%s: %d bytes kept, more than its length %d; starting over", t.Path, off, t.Length)
	}
	if free, _, ok := c.cfg.Flash(c.cfg.Dir); ok && free < uint64(t.Length-off) {
		return 0, refuse(NoSpace, nil, "%s needs %d more bytes; the flash has %d free", t.Path, t.Length-off, free)
	}
	got, r := c.appendBlob(ctx, f, t, sum, off)
	// What this wake fetched is synced however it ended (budget spent,
	// fetch failed, whole), so that a power cut after the wake keeps it
	// for the next one to resume from.
	if got > 0 || r == nil {
		if err := f.Sync(); err != nil {
			return got, refuse(Invalid, err, "the partial download")
		}
	}
	return got, r
}

// appendBlob appends to f, at off, what the relay has of the blob, at
// most Config.Budget bytes.
func (c *Client) appendBlob(ctx context.Context, f *os.File, t *tuf.TargetFile, sum string, off int64) (int64, *Refusal) {
	var got int64
	for off < t.Length {
		want := min(t.Length-off, chunk, c.cfg.Budget-got)
		if want <= 0 {
			return got, refuse(Budget, nil, "%s: %d of %d bytes; the rest at the next wake", t.Path, off, t.Length)
		}
		b, err := c.cfg.Source.Blob(ctx, sum, off, want)
		if err != nil {
			return got, refuse(Fetch, err, "%s at byte %d", t.Path, off)
		}
		if int64(len(b)) > want {
			return got, refuse(EndlessData, nil, "%s: the relay sent %d bytes at %d where the target's length %d leaves %d",
				t.Path, len(b), off, t.Length, want)
		}
		if len(b) == 0 {
			return got, refuse(Fetch, nil, "%s: the relay has no bytes at %d of %d", t.Path, off, t.Length)
		}
		if _, err := f.Write(b); err != nil {
			return got, refuse(Invalid, err, "the partial download")
		}
		off += int64(len(b))
		got += int64(len(b))
	}
	return got, nil
}

// verify checks the whole file against the target and moves it to done.
func (c *Client) verify(t *tuf.TargetFile, part, done string) *Refusal {
	b, err := os.ReadFile(part)
	if err != nil {
		return refuse(Invalid, err, "reading the download")
	}
	if err := t.VerifyLengthHashes(b); err != nil {
		if errors.Is(err, tuf.ErrLengthOrHash) {
			return refuse(BadTarget, err, "%s: the download is not the target; dropped", t.Path)
		}
		return refuse(BadTarget, err, "%s", t.Path)
	}
	if err := os.Rename(part, done); err != nil {
		return refuse(Invalid, err, "keeping the verified download")
	}
	return nil
}
