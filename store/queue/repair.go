package queue

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

// RepairLog repairs the record log in dir that OpenLog refuses as
// damaged (a *recordlog.DamageError): each damaged segment is kept as it
// was (a copy named in the result) and rewritten with every record,
// tombstone and seq frame that can still be read (recordlog.Salvage),
// until the log opens. It returns what it did, one entry per segment it
// repaired (none when the log opens as it is). What a repair drops is
// lost; what it keeps may include the records of a commit that was never
// acknowledged or whose tombstone was damaged, which a device may then
// receive twice (its replay cache drops the repeat). The log must not be
// open elsewhere (OpenLog's lock says so).
func RepairLog(dir string, now time.Time) ([]recordlog.Salvaged, error) {
	// The checkpoint would spare the frames it covers a decode, not find
	// what a repair drops: the repaired log is read whole.
	if err := os.Remove(filepath.Join(dir, checkpointFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("queue: removing the index checkpoint: %w", err)
	}
	var done []recordlog.Salvaged
	check := func(e recordlog.Entry) error {
		_, err := decodePayload(e.Type, e.Fields)
		return err
	}
	for {
		l, err := OpenLog(dir, &LogOptions{Now: func() time.Time { return now }})
		if err == nil {
			return done, l.Close()
		}
		var de *recordlog.DamageError
		if !errors.As(err, &de) {
			return done, err
		}
		for _, s := range done {
			if s.Path == de.Path {
				return done, fmt.Errorf("queue: %s is still damaged after its repair: %w", de.Path, err)
			}
		}
		s, err := recordlog.Salvage(de.Path, now, check)
		if err != nil {
			return done, err
		}
		done = append(done, s)
	}
}
