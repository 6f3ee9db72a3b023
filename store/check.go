package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"strings"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// CorruptError reports a bbolt file that is damaged: bbolt refused its meta
// pages, it is shorter than its meta page says, a page fails bbolt's
// consistency check (tx.Check, the logic of "bbolt check"), or reading it
// panicked. Nothing was written to the file.
type CorruptError struct {
	Path string
	// Problems are what the check found, the first few of them.
	Problems []string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store: %s is corrupt: %s", e.Path, strings.Join(e.Problems, "; "))
}

// maxProblems caps CorruptError.Problems.
const maxProblems = 5

// openChecked opens path as Open does and checks it: a damaged file is a
// *CorruptError, never a panic. bbolt trusts its file: a truncated one makes
// it fault on the memory map and a garbage page fails its assertions, so
// the opening goroutine turns faults into panics (debug.SetPanicOnFault)
// and recovers them.
func openChecked(path string, bo *bolt.Options) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				db.Close()
			}
			db, err = nil, &CorruptError{Path: path, Problems: []string{fmt.Sprintf("reading it panicked: %v", r)}}
		}
	}()
	if problem := truncated(path); problem != "" {
		return nil, &CorruptError{Path: path, Problems: []string{problem}}
	}
	db, err = bolt.Open(path, 0o600, bo)
	if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch) {
		return nil, &CorruptError{Path: path, Problems: []string{err.Error()}}
	}
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	if problems := check(db, path); len(problems) > 0 {
		db.Close()
		return nil, &CorruptError{Path: path, Problems: problems}
	}
	return db, nil
}

// check runs bbolt's consistency check after making sure the file holds
// every page its meta page counts (the check itself would fault reading
// past the end of a truncated file, in a goroutine of its own), then the
// branch keys bbolt's check leaves alone (branchKeys).
func check(db *bolt.DB, path string) []string {
	var problems []string
	db.View(func(tx *bolt.Tx) error {
		fi, err := os.Stat(path)
		if err != nil {
			problems = append(problems, err.Error())
			return nil
		}
		if fi.Size() < tx.Size() {
			problems = append(problems, fmt.Sprintf("the file has %d bytes, its meta page counts %d (truncated)", fi.Size(), tx.Size()))
			return nil
		}
		walk(tx)
		for e := range tx.Check() { // drained to the end: the checker blocks on the channel otherwise
			if len(problems) < maxProblems {
				problems = append(problems, e.Error())
			}
		}
		if len(problems) == 0 {
			problems = branchKeys(path, uint64(tx.ID()), true)
		}
		return nil
	})
	return problems
}

// walk reads every key of every bucket, nested ones included, in the
// calling goroutine, before tx.Check runs its check in a goroutine of its
// own: a child page pointer that leads outside the memory map faults here,
// where openChecked turns the fault into a panic and recovers it, and not
// in bbolt's goroutine, where a fault ends the process.
func walk(tx *bolt.Tx) {
	tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
		walkBucket(b)
		return nil
	})
}

func walkBucket(b *bolt.Bucket) {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				walkBucket(nb)
			}
		}
	}
}

// The meta page's layout (go.etcd.io/bbolt/internal/common/meta.go and
// page.go): a 16-byte page header, then magic, version, page size and
// flags (4 bytes each), the root bucket (16), the freelist page id (8), the
// page count (8), the transaction id (8) and an FNV-64a checksum of the
// meta's bytes before it.
const (
	metaMagic    = 0xED0CDAED
	metaStart    = 16
	metaPageSize = metaStart + 8
	metaPgid     = metaStart + 40
	metaTxid     = metaStart + 48
	metaChecksum = metaStart + 56
)

// truncated reads the file's meta pages before bbolt does and reports a
// file shorter than the pages the newest valid one counts: bbolt would
// read past its end through the memory map and fault while opening it,
// with the file lock held. "" means not truncated (or no valid meta page,
// which bbolt reports itself).
func truncated(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	var best []byte
	off := int64(0)
	for i := 0; i < 2; i++ {
		buf := make([]byte, metaChecksum+8)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return ""
		}
		// The second meta page follows the first, one page further; with
		// the first unreadable, bbolt guesses the OS's page size.
		off = int64(os.Getpagesize())
		if !validMeta(buf) {
			continue
		}
		if i == 0 {
			off = int64(binary.LittleEndian.Uint32(buf[metaPageSize:]))
		}
		if best == nil || binary.LittleEndian.Uint64(buf[metaTxid:]) > binary.LittleEndian.Uint64(best[metaTxid:]) {
			best = buf
		}
	}
	if best == nil {
		return ""
	}
	need := int64(binary.LittleEndian.Uint64(best[metaPgid:])) * int64(binary.LittleEndian.Uint32(best[metaPageSize:]))
	if fi.Size() < need {
		return fmt.Sprintf("the file has %d bytes, its meta page counts %d (truncated)", fi.Size(), need)
	}
	return ""
}

func validMeta(b []byte) bool {
	if binary.LittleEndian.Uint32(b[metaStart:]) != metaMagic {
		return false
	}
	h := fnv.New64a()
	h.Write(b[metaStart:metaChecksum])
	return h.Sum64() == binary.LittleEndian.Uint64(b[metaChecksum:])
}

// MetaFallback reports a bbolt file one of whose two meta pages fails its
// checksum while the other is sound, or whose two sound pages do not hold
// consecutive transactions. bbolt opens such a file silently at the newest
// sound page's transaction, which may be older than the last commit: what
// that commit wrote is gone. A file bbolt just created or committed to has
// both pages sound, one transaction apart, so anything else is damage. It
// returns "" for a sound pair, when neither page is sound (bbolt refuses
// that file itself), or when the file cannot be read.
func MetaFallback(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	first := make([]byte, metaChecksum+8)
	if _, err := f.ReadAt(first, 0); err != nil {
		return ""
	}
	off := int64(os.Getpagesize())
	if validMeta(first) {
		off = int64(binary.LittleEndian.Uint32(first[metaPageSize:]))
	}
	second := make([]byte, metaChecksum+8)
	if _, err := f.ReadAt(second, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	tx0, tx1 := binary.LittleEndian.Uint64(first[metaTxid:]), binary.LittleEndian.Uint64(second[metaTxid:])
	switch ok0, ok1 := validMeta(first), validMeta(second); {
	case ok0 && ok1 && tx0 != tx1+1 && tx1 != tx0+1:
		// Each commit writes the meta page of its transaction's parity,
		// so the two always hold consecutive transactions.
		return fmt.Sprintf("the meta pages of %s hold transactions %d and %d, not consecutive ones: one page is stale, so a commit may be lost",
			path, tx0, tx1)
	case ok0 == ok1:
		return ""
	case ok0:
		return fmt.Sprintf("meta page 1 of %s fails its checksum; it was opened at transaction %d from meta page 0, so the last commit may be lost",
			path, tx0)
	default:
		return fmt.Sprintf("meta page 0 of %s fails its checksum; it was opened at transaction %d from meta page 1, so the last commit may be lost",
			path, tx1)
	}
}
