package tufsign

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"

	"github.com/torpor-dev/torpor/internal/tufcustom"
)

// Delta returns the delta from build from to build to that
// runtime/update patches with (tufcustom.Delta): a zstd frame (RFC 8878)
// at the best level whose dictionary, id tufcustom.DeltaDictID, is the
// raw content of from (RFC 8878 Section 5), with a window that covers
// both builds (at most tufcustom.MaxDeltaWindow, which devices accept),
// as `zstd --patch-from` makes them.
func Delta(from, to []byte) ([]byte, error) {
	if len(from) == 0 || len(to) == 0 {
		return nil, errors.New("tufsign: a delta needs two builds")
	}
	w := zstd.MinWindowSize
	for w < len(from)+len(to) {
		w <<= 1
	}
	if w > tufcustom.MaxDeltaWindow {
		return nil, fmt.Errorf("tufsign: builds of %d and %d bytes need a window of %d bytes; devices accept at most %d", len(from), len(to), w, tufcustom.MaxDeltaWindow)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithWindowSize(w),
		zstd.WithEncoderDictRaw(tufcustom.DeltaDictID, from), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("tufsign: %w", err)
	}
	defer enc.Close()
	return enc.EncodeAll(to, nil), nil
}
