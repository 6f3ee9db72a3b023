package update

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"strconv"
)

// decompress writes the gzip target at path (verified: its length and
// hashes are the target's) decompressed to path.out and returns that.
// It reads at most size+1 bytes of it, so a target that decompresses to
// more than its stated size costs no more than that, and is refused
// (gzip's CRC-32 and length, RFC 1952 Section 2.3.1, are checked at its
// end).
func (c *Client) decompress(name, path string, size int64) (string, *Refusal) {
	if free, _, ok := c.cfg.Flash(c.cfg.Dir); ok && free < uint64(size) {
		return "", refuse(NoSpace, nil, "%s decompresses to %d bytes; the flash has %d free", name, size, free)
	}
	in, err := os.Open(path)
	if err != nil {
		return "", refuse(Invalid, err, "%s", name)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return "", refuse(BadTarget, err, "%s is not gzip", name)
	}
	out := path + ".out"
	defer os.Remove(out + ".tmp") // no-op after the rename
	n, err := writeBounded(out+".tmp", zr, size)
	var oe *openError
	switch {
	case errors.As(err, &oe):
		return "", refuse(Invalid, err, "%s", name)
	case err != nil:
		return "", refuse(BadTarget, err, "decompressing %s", name)
	case n != size:
		return "", refuse(BadTarget, nil, "%s decompresses to %s bytes, not its stated %d", name, more(n, size), size)
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		return "", refuse(Invalid, err, "%s", name)
	}
	return out, nil
}

func more(n, size int64) string {
	if n > size {
		return "more than " + strconv.FormatInt(size, 10)
	}
	return strconv.FormatInt(n, 10)
}

// openError is writeBounded's failure to make the file: the device's
// flash, not the target (Invalid, not BadTarget).
type openError struct{ error }

func (e *openError) Unwrap() error { return e.error }

// writeBounded writes what r gives into a new file at path (private to the
// agent) and syncs it, up to one byte more than limit: a count above limit
// says r would have given more than it should (a decompression or a
// patch past the target's length), which the caller refuses.
func writeBounded(path string, r io.Reader, limit int64) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, &openError{err}
	}
	n, err := io.Copy(f, io.LimitReader(r, limit+1))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}
