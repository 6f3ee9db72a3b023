package runtime

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/torpor-dev/torpor/store"
)

// offlineLockTimeout is how long OpenOffline waits for the bbolt file's
// lock before it concludes a running agent holds it.
const offlineLockTimeout = 2 * time.Second

// OpenOffline opens the agent's bbolt file (Config.Store.DataDir) and its
// pipeline on c.PipelineConfig, for the operator's commands while the
// agent is stopped (torpor-agent status, ledger, confirm, halt, ...;
// bbolt admits one process). It refuses a missing or empty file, a
// corrupt one (ErrStoreRefused, with bbolt's consistency check) and one
// that another process, a running agent, holds. The returned function
// closes the pipeline and the file.
func OpenOffline(c Config) (*Pipeline, func(), error) {
	path := c.dbPath()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		if err == nil {
			err = errors.New("the file is empty")
		}
		return nil, nil, fmt.Errorf("no agent store at %s: %w", path, err)
	}
	db, err := store.Open(path, &store.Options{Timeout: offlineLockTimeout, Check: true})
	var ce *store.CorruptError
	if errors.As(err, &ce) {
		return nil, nil, fmt.Errorf("%w: %w", ErrStoreRefused, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w (is torpor-agent running? stop it first)", err)
	}
	p, err := OpenPipeline(db, c.PipelineConfig)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return p, func() { p.Close(); db.Close() }, nil
}
