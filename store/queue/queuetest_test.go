package queue_test

import (
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/queue/queuetest"
)

// TestBoltContract runs the Store contract suite against Bolt; a store
// opened again is the same file reopened.
func TestBoltContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Opener {
		path := filepath.Join(t.TempDir(), "queue.db")
		return func(t *testing.T) queue.Store {
			s, err := queue.OpenBolt(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}

// TestLogContract runs the Store contract suite against the record log,
// with segments small enough that the suite's records span several and
// old ones are deleted; a store opened again is the directory reopened.
func TestLogContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Opener {
		dir := filepath.Join(t.TempDir(), "queue.log")
		return func(t *testing.T) queue.Store {
			s, err := queue.OpenLog(dir, &queue.LogOptions{SegmentSize: 256})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}

// TestLogContractOverlap runs the contract suite against the record log
// with two commits in flight (LogOptions.OverlapSyncs).
func TestLogContractOverlap(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Opener {
		dir := filepath.Join(t.TempDir(), "queue.log")
		return func(t *testing.T) queue.Store {
			s, err := queue.OpenLog(dir, &queue.LogOptions{SegmentSize: 256, OverlapSyncs: true})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}
