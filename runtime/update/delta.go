package update

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"github.com/torpor-dev/torpor/runtime/update/tuf"

	"github.com/torpor-dev/torpor/internal/tufcustom"
)

// A delta is only a transport: the device fetches it (by ranges, within
// the budget, resumed across wakes, checked against the length and
// SHA-256 the signed custom fields give it), patches the build it runs
// with it, and the result must pass the target's own length and hashes
// (TUF specification Section 5.7.3) before it is handed on. A delta
// that fails any of that is dropped and the target is fetched whole from
// the next check on (a marker <sha256>.nodelta in part/).

// fetchTarget downloads the target, through a delta from the running
// build when the target has one and no whole download is under way.
func (c *Client) fetchTarget(ctx context.Context, t *tuf.TargetFile, cu Custom) (string, int64, *Refusal) {
	d := c.deltaFor(t, cu)
	if d == nil {
		return c.download(ctx, t)
	}
	return c.viaDelta(ctx, t, d)
}

// deltaFor returns the target's delta from the running build, or nil.
func (c *Client) deltaFor(t *tuf.TargetFile, cu Custom) *Delta {
	sum := t.Hashes["sha256"].String()
	if c.cfg.Running == "" || len(cu.Deltas) == 0 || len(sum) != 64 {
		return nil
	}
	part := filepath.Join(c.cfg.Dir, "part", sum)
	if _, err := os.Stat(filepath.Join(c.cfg.Dir, "verified", sum)); err == nil {
		return nil // whole already
	}
	if fi, err := os.Stat(part); err == nil && fi.Size() > 0 {
		return nil // a whole download under way
	}
	if _, err := os.Stat(part + ".nodelta"); err == nil {
		return nil
	}
	running, err := FileSHA256(c.cfg.Running)
	if err != nil {
		return nil
	}
	for _, d := range cu.Deltas {
		if d.From == running {
			return &d
		}
	}
	return nil
}

// FileSHA256 returns the hex SHA-256 of the file at path: the form a
// TUF target's sha256 hash takes.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// viaDelta fetches delta d of target t, patches the running build with
// it and checks the result against t.
func (c *Client) viaDelta(ctx context.Context, t *tuf.TargetFile, d *Delta) (string, int64, *Refusal) {
	sum := t.Hashes["sha256"].String()
	dsum, _ := hex.DecodeString(d.SHA256)
	dt := &tuf.TargetFile{Length: d.Length, Hashes: tuf.Hashes{"sha256": dsum}, Path: t.Path + " (delta)"}
	dir := filepath.Join(c.cfg.Dir, "part")
	dropOtherParts(dir, sum, d.SHA256)
	part := filepath.Join(dir, d.SHA256)
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", 0, refuse(Invalid, err, "the partial download")
	}
	n, r := c.fill(ctx, f, dt, d.SHA256)
	f.Close()
	if r != nil && r.Code == Fetch && errors.Is(r.Err, ErrNotFound) {
		r.Detail += "; the relay has no such delta: the whole target next"
		return "", n, c.dropDelta(sum, part, r)
	}
	if r != nil {
		return "", n, r
	}
	b, err := os.ReadFile(part)
	if err == nil {
		err = dt.VerifyLengthHashes(b)
	}
	if err != nil {
		return "", n, c.dropDelta(sum, part, refuse(BadTarget, err, "%s: the delta is not the one signed; the whole target next", t.Path))
	}
	out := filepath.Join(dir, sum+".patched")
	done := filepath.Join(c.cfg.Dir, "verified", sum)
	r = c.patch(t, b, out)
	if r == nil {
		r = c.verify(t, out, done)
	}
	if r != nil {
		os.Remove(out)
		r.Detail += " (patched with its delta); the whole target next"
		return "", n, c.dropDelta(sum, part, r)
	}
	os.Remove(part)
	return done, n, nil
}

// dropDelta removes the delta's download and marks the target to be
// fetched whole; it returns r.
func (c *Client) dropDelta(sum, part string, r *Refusal) *Refusal {
	os.Remove(part)
	os.WriteFile(filepath.Join(c.cfg.Dir, "part", sum+".nodelta"), nil, 0o600)
	return r
}

// patch writes the running build patched with delta to out, reading at
// most the target's length + 1 bytes of the result.
func (c *Client) patch(t *tuf.TargetFile, delta []byte, out string) *Refusal {
	if free, _, ok := c.cfg.Flash(c.cfg.Dir); ok && free < uint64(t.Length) {
		return refuse(NoSpace, nil, "%s patches to %d bytes; the flash has %d free", t.Path, t.Length, free)
	}
	base, err := os.ReadFile(c.cfg.Running)
	if err != nil {
		return refuse(Invalid, err, "reading the running build")
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDictRaw(DeltaDictID, base), zstd.WithDecoderMaxWindow(tufcustom.MaxDeltaWindow),
		zstd.WithDecoderConcurrency(1))
	if err != nil {
		return refuse(Invalid, err, "the delta's decoder")
	}
	defer dec.Close()
	if err := dec.Reset(bytes.NewReader(delta)); err != nil {
		return refuse(BadTarget, err, "%s: the delta", t.Path)
	}
	n, err := writeBounded(out, dec, t.Length)
	var oe *openError
	switch {
	case errors.As(err, &oe):
		return refuse(Invalid, err, "%s", t.Path)
	case err != nil:
		os.Remove(out)
		return refuse(BadTarget, err, "%s: patching with the delta", t.Path)
	case n != t.Length:
		os.Remove(out)
		return refuse(BadTarget, nil, "%s: the delta patches to %s bytes, not the target's %d", t.Path, more(n, t.Length), t.Length)
	}
	return nil
}
