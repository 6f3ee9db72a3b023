package queue_test

import (
	"testing"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/queue/queuetest"
	"github.com/torpor-dev/torpor/store/storetest"
)

// TestBoltContract runs the Store contract suite against Bolt; a store
// opened again is the same file reopened.
func TestBoltContract(t *testing.T) {
	queuetest.Run(t, storetest.InDir("queue.db", func(path string) (queue.Store, error) { return queue.OpenBolt(path, nil) }))
}

// TestLogContract runs the Store contract suite against the record log,
// with segments small enough that the suite's records span several and
// old ones are deleted; a store opened again is the directory reopened.
func TestLogContract(t *testing.T) {
	queuetest.Run(t, storetest.InDir("queue.log", func(path string) (queue.Store, error) {
		return queue.OpenLog(path, &queue.LogOptions{SegmentSize: 256})
	}))
}

// TestLogContractOverlap runs the contract suite against the record log
// with two commits in flight (LogOptions.OverlapSyncs).
func TestLogContractOverlap(t *testing.T) {
	queuetest.Run(t, storetest.InDir("queue.log", func(path string) (queue.Store, error) {
		return queue.OpenLog(path, &queue.LogOptions{SegmentSize: 256, OverlapSyncs: true})
	}))
}
