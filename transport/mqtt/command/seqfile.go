package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/atomicfile"
)

// SeqFile holds the last sequence number one operator key used with each
// device, as JSON (DID → number) in the file Path, so that a clock that
// steps back does not make an operator machine reuse a number (torporctl
// keeps it beside the key, as KEY.seq).
type SeqFile struct {
	Path string
}

// Next returns the sequence number of the next command to dev: want when
// it is not zero, else NextSeq of the last one used at now. It records the
// number before returning, so that a command that fails after leaving
// never has its number reused.
func (f SeqFile) Next(dev did.DID, want uint64, now time.Time) (uint64, error) {
	last := map[string]uint64{}
	if b, err := os.ReadFile(f.Path); err == nil {
		if err := json.Unmarshal(b, &last); err != nil {
			return 0, fmt.Errorf("sequence file %s: %v (delete it; sequence numbers are time-based anyway)", f.Path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	seq := want
	if seq == 0 {
		seq = NextSeq(last[dev.String()], now)
	}
	if seq > last[dev.String()] {
		last[dev.String()] = seq
	}
	b, _ := json.MarshalIndent(last, "", "  ")
	if err := atomicfile.WriteFile(f.Path, append(b, '\n'), 0o600); err != nil {
		return 0, err
	}
	return seq, nil
}
