// Package storetest holds what the tests of store/... share: it runs a
// store interface's contract suite over every engine (RunContract), and it
// damages bbolt files the ways a bad disk, a power cut on a card without
// power-loss protection, or a careless operator do, for the tests of
// store.Open's check and of the agent that refuses such a store.
package storetest

import (
	"encoding/binary"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// Damage is one way of damaging a bbolt file.
type Damage struct {
	Name string
	Do   func(path string) error
}

// Damages are the ways the tests damage a file: truncated to half, both
// meta pages zeroed, one meta page zeroed, garbage over the top-level
// buckets' page, a branch page's child pointer sent far past the file's
// end, a file cut to a few bytes, and a leaf's first key that no longer
// equals its element in the parent page.
var Damages = []Damage{
	{"truncated", Truncate},
	{"zeroed-meta-pages", func(p string) error { return zeroPages(p, 0, 2) }},
	{"zeroed-second-meta-page", func(p string) error { return zeroPages(p, 1, 1) }},
	{"garbage-page", GarbagePage},
	{"wild-child-pointer", WildChildPointer},
	{"cut-to-100-bytes", func(p string) error { return os.Truncate(p, 100) }},
	{"first-key-raised", RaiseFirstKey},
}

// Truncate cuts the file to half its pages' length, as a write that never
// reached the disk does.
func Truncate(path string) error {
	_, hw, err := layout(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, hw/2)
}

// GarbagePage writes garbage over the page that holds the file's
// top-level buckets.
func GarbagePage(path string) error {
	var root uint64
	size, err := view(path, func(tx *bolt.Tx) error {
		root = uint64(tx.Cursor().Bucket().Root()) // the page of the top-level buckets
		return nil
	})
	if err != nil {
		return err
	}
	if root < 2 {
		return fmt.Errorf("storetest: %s: root page %d", path, root)
	}
	g := make([]byte, size)
	for i := range g {
		g[i] = byte(i*7 + 3)
	}
	return writeAt(path, g, int64(root)*int64(size))
}

// WildChildPointer points the first child of the branch page at the root
// of the file's first top-level bucket with more than one page far past
// the file's end. bbolt follows it into unmapped memory: a fault, not an
// error (test/faults' TestDamage found one at queue.db@201396).
func WildChildPointer(path string) error {
	var branch, root uint64
	size, err := view(path, func(tx *bolt.Tx) error {
		root = uint64(tx.Cursor().Bucket().Root())
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			if branch == 0 && b.Stats().BranchPageN > 0 {
				branch = uint64(b.Root())
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	// A branch page: a 16-byte header (id 8 bytes, flags 2, count 2,
	// overflow 4), then elements of pos (4 bytes), key size (4) and child
	// page id (8), little-endian (go.etcd.io/bbolt/internal/common/page.go).
	// A file too small for a branch page has the page of its top-level
	// buckets made one.
	if branch < 2 {
		if root < 2 {
			return fmt.Errorf("storetest: %s: root page %d", path, root)
		}
		branch = root
		if err := writeAt(path, []byte{0x01, 0}, int64(branch)*int64(size)+8); err != nil {
			return err
		}
	}
	wild := []byte{0, 0, 0, 0, 2, 0, 0, 0} // page 1<<33: 32 TiB past the map
	return writeAt(path, wild, int64(branch)*int64(size)+16+8)
}

func zeroPages(path string, first, n int) error {
	size, _, err := layout(path)
	if err != nil {
		return err
	}
	return writeAt(path, make([]byte, n*size), int64(first*size))
}

// layout returns the file's page size and the length its pages take.
func layout(path string) (pageSize int, highWater int64, err error) {
	pageSize, err = view(path, func(tx *bolt.Tx) error {
		highWater = tx.Size()
		return nil
	})
	return pageSize, highWater, err
}

// view opens the file read-only, runs f in a read transaction, closes it
// and returns the file's page size and f's error.
func view(path string, f func(tx *bolt.Tx) error) (pageSize int, err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return db.Info().PageSize, db.View(f)
}

// WriteAt writes b into the file at path at off, as a write that reached
// some sectors and not others leaves it.
func WriteAt(path string, b []byte, off int64) error { return writeAt(path, b, off) }

func writeAt(path string, b []byte, off int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, off); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// FlipMeta flips one byte of meta page n (0 or 1), inside the page count
// that its checksum covers, as a bit rot on the card does: bbolt then
// takes the other page, if it is sound, without a word.
func FlipMeta(path string, n int) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	size := os.Getpagesize()
	hdr := make([]byte, 28)
	if _, err := f.ReadAt(hdr, 0); err == nil && hdr[16] != 0 {
		size = int(uint32(hdr[24]) | uint32(hdr[25])<<8 | uint32(hdr[26])<<16 | uint32(hdr[27])<<24)
	}
	off := int64(n*size) + 16 + 40 // the page header, then the meta's page count
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		return err
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		return err
	}
	return f.Close()
}

// RaiseFirstKey moves the boundary between the first key and its value
// in the first element of a leaf page that is not its parent's first
// child, in the first top-level bucket with more than one page (a file
// without one gets a bucket of filler first): the key
// gains its value's first byte. The key order that bbolt's check asks for
// holds, but the key no longer equals its element in the parent page.
// test/faults' TestDamage found such keys (eight flipped bytes in a
// leaf's first key) that bbolt opened and checked, then panicked on
// ("page N already freed") a few commits later.
func RaiseFirstKey(path string) error {
	size, _, err := layout(path)
	if err != nil {
		return err
	}
	branch, err := firstBranch(path)
	if err != nil {
		if err := addFiller(path); err != nil {
			return err
		}
		if branch, err = firstBranch(path); err != nil {
			return err
		}
	}
	p := make([]byte, size)
	if err := readAt(path, p, int64(branch)*int64(size)); err != nil {
		return err
	}
	if binary.LittleEndian.Uint16(p[10:]) < 2 {
		return fmt.Errorf("storetest: %s: branch page %d has one child", path, branch)
	}
	// A branch element: pos, key size, child page id; a leaf element:
	// flags, pos, key size, value size (after the 16-byte page header).
	child := int64(binary.LittleEndian.Uint64(p[16+16+8:]))
	if err := readAt(path, p, child*int64(size)); err != nil {
		return err
	}
	if binary.LittleEndian.Uint16(p[8:]) != 0x02 || binary.LittleEndian.Uint32(p[16+12:]) == 0 {
		return fmt.Errorf("storetest: %s: page %d is not a leaf whose first value has a byte", path, child)
	}
	binary.LittleEndian.PutUint32(p[16+8:], binary.LittleEndian.Uint32(p[16+8:])+1)
	binary.LittleEndian.PutUint32(p[16+12:], binary.LittleEndian.Uint32(p[16+12:])-1)
	return writeAt(path, p[16:32], child*int64(size)+16)
}

// addFiller gives a file too small for a branch page a bucket of a few
// pages ("storetest-filler") to damage.
func addFiller(path string) error {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("storetest-filler"))
		for i := 0; i < 200 && err == nil; i++ {
			err = b.Put(fmt.Appendf(nil, "filler%04d", i), make([]byte, 100))
		}
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// firstBranch returns the root page of the file's first top-level bucket
// whose root is a branch page (flags 0x01 in the page header; Stats
// counts nested buckets' pages too, so the root is read itself).
func firstBranch(path string) (uint64, error) {
	var roots []uint64
	size, err := view(path, func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			if b.Root() >= 2 {
				roots = append(roots, uint64(b.Root()))
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	hdr := make([]byte, 16)
	for _, r := range roots {
		if err := readAt(path, hdr, int64(r)*int64(size)); err == nil && binary.LittleEndian.Uint16(hdr[8:]) == 0x01 {
			return r, nil
		}
	}
	return 0, fmt.Errorf("storetest: %s: no top-level bucket's root is a branch page", path)
}

func readAt(path string, b []byte, off int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err = f.ReadAt(b, off); err != nil {
		return fmt.Errorf("storetest: reading %d bytes of %s at %d: %w", len(b), path, off, err)
	}
	return nil
}
