package drain

import (
	"errors"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/torpor-dev/torpor/store"
)

// ErrStore is wrapped by the error of Batch when the batch's transaction
// failed: a bbolt write or
// commit failed (disk full, I/O error), or a store the batch uses (replay
// cache, ledger, gate) did. The batch was rolled back and nothing was
// acknowledged: the relay keeps every record of it and delivers them again,
// at the next wake. A failed record is never reported as rejected for it.
var ErrStore = errors.New("drain: store failure; batch rolled back, nothing acknowledged")

// ErrUntrusted is wrapped by the error of Batch when the agent has no
// time it can trust to judge expiry by (Config.Expiry): the batch was
// held, nothing judged and nothing acknowledged; the relay keeps every
// record of it.
var ErrUntrusted = errors.New("drain: no trusted time; batch held, nothing judged or acknowledged")

// bboltErrors are the errors a bbolt call inside a transaction returns; a
// Sessions error that wraps one is a store failure, not the message's.
var bboltErrors = []error{
	berrors.ErrTxNotWritable, berrors.ErrTxClosed, berrors.ErrDatabaseNotOpen, berrors.ErrDatabaseReadOnly,
	berrors.ErrBucketNotFound, berrors.ErrBucketExists, berrors.ErrBucketNameRequired, berrors.ErrKeyRequired,
	berrors.ErrKeyTooLarge, berrors.ErrValueTooLarge, berrors.ErrMaxSizeReached, berrors.ErrIncompatibleValue,
	berrors.ErrInvalid, berrors.ErrInvalidMapping, berrors.ErrChecksum, berrors.ErrFreePagesNotLoaded,
	berrors.ErrSameBuckets, berrors.ErrDifferentDB,
}

// StoreFailure reports whether err, returned by Sessions inside the batch
// transaction, is a failure of the store rather than of the message: it
// wraps one of bbolt's errors (go.etcd.io/bbolt/errors) or store.ErrFull.
// Such an error may have left the transaction half changed, so the drain
// rolls the whole batch back instead of rejecting the record.
func StoreFailure(err error) bool {
	if errors.Is(err, store.ErrFull) {
		return true
	}
	for _, e := range bboltErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
