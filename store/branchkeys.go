package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// The page layout bbolt writes (go.etcd.io/bbolt/internal/common/page.go
// and inlinepage.go): a 16-byte header (id 8 bytes, flags 2, count 2,
// overflow 4), then count elements of 16 bytes. A branch element is pos
// (4 bytes), key size (4) and child page id (8); a leaf element is flags
// (4), pos (4), key size (4) and value size (4); pos counts from the
// element's own start, and a leaf's value follows its key. A leaf element
// with flag 1 is a nested bucket: its value starts with the bucket's root
// page id and sequence (8 bytes each), and a root of 0 means the bucket is
// inline, its one leaf page following in the value.
const (
	pageHeaderLen   = 16
	pageElementLen  = 16
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	bucketLeafFlag  = 0x01
	bucketHeaderLen = 16
	metaRoot        = metaStart + 16
	maxTreeDepth    = 64
)

// branchKeys checks what bbolt's own check (tx.Check) does not: that each
// branch element's key equals the first key of the page it points to, in
// every bucket of the file at path as of transaction txid. bbolt's check
// only asks that the child's first key be no smaller; but when bbolt
// rewrites a child, it finds the child's element in the parent by the
// child's first key, so an element whose key differs gains a twin that
// points at the same page: bbolt frees that page twice on a later commit
// and panics ("page N already freed"), after commits that already wrote
// the doubled reference. Eight flipped bytes in a key are enough.
// Where it can, it maps the file rather than read each page (mapped).
func branchKeys(path string, txid uint64, mapped bool) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	meta, ok := metaOf(f, txid)
	if !ok {
		return nil // bbolt opened it, so its check judges the meta pages
	}
	r := &pageReader{
		f:        f,
		pageSize: int64(binary.LittleEndian.Uint32(meta[metaPageSize:])),
		pages:    binary.LittleEndian.Uint64(meta[metaPgid:]),
		seen:     map[uint64]bool{},
	}
	// truncated has made sure the file holds every page the meta page
	// counts; a file cut since faults, and openChecked recovers that.
	if mapped {
		if data, unmap, err := mapFile(f, int64(r.pages)*r.pageSize); err == nil {
			defer unmap()
			r.data = data
		}
	}
	r.tree(binary.LittleEndian.Uint64(meta[metaRoot:]), 0)
	return r.problems
}

// metaOf returns the sound meta page of the file that holds txid.
func metaOf(f *os.File, txid uint64) ([]byte, bool) {
	off := int64(os.Getpagesize())
	for i := 0; i < 2; i++ {
		buf := make([]byte, metaChecksum+8)
		at := int64(0)
		if i == 1 {
			at = off
		}
		if _, err := f.ReadAt(buf, at); err != nil && !errors.Is(err, io.EOF) {
			return nil, false
		}
		if !validMeta(buf) {
			continue
		}
		if i == 0 {
			off = int64(binary.LittleEndian.Uint32(buf[metaPageSize:]))
		}
		if binary.LittleEndian.Uint64(buf[metaTxid:]) == txid {
			return buf, true
		}
	}
	return nil, false
}

// pageReader reads a bbolt file's pages from a memory map of its own, or
// with ReadAt where there is none. A page id out of bounds is a problem,
// never a read past the end.
type pageReader struct {
	f        *os.File
	data     []byte // the file's pages mapped, or nil
	pageSize int64
	pages    uint64 // the meta page's page count: ids at or past it are damage
	seen     map[uint64]bool
	problems []string
}

func (r *pageReader) problem(format string, args ...any) {
	if len(r.problems) < maxProblems {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

// page reads page id with its overflow pages; nil if it cannot.
func (r *pageReader) page(id uint64) []byte {
	if id < 2 || id >= r.pages {
		r.problem("page %d: out of bounds [2, %d)", id, r.pages)
		return nil
	}
	if r.data != nil {
		off := int64(id) * r.pageSize
		overflow := uint64(binary.LittleEndian.Uint32(r.data[off+12:]))
		if id+overflow >= r.pages {
			r.problem("page %d: %d overflow pages run past the file's %d pages", id, overflow, r.pages)
			return nil
		}
		return r.data[off : off+int64(1+overflow)*r.pageSize]
	}
	p := make([]byte, r.pageSize)
	if _, err := r.f.ReadAt(p, int64(id)*r.pageSize); err != nil {
		r.problem("page %d: %v", id, err)
		return nil
	}
	overflow := uint64(binary.LittleEndian.Uint32(p[12:]))
	if overflow == 0 {
		return p
	}
	if id+overflow >= r.pages {
		r.problem("page %d: %d overflow pages run past the file's %d pages", id, overflow, r.pages)
		return nil
	}
	p = append(p, make([]byte, int64(overflow)*r.pageSize)...)
	if _, err := r.f.ReadAt(p[r.pageSize:], int64(id+1)*r.pageSize); err != nil {
		r.problem("page %d: %v", id, err)
		return nil
	}
	return p
}

// tree checks the pages under page id and returns the first key of page
// id (nil for an empty page or one it could not read).
func (r *pageReader) tree(id uint64, depth int) []byte {
	if r.seen[id] || depth > maxTreeDepth || len(r.problems) >= maxProblems {
		return nil // bbolt's check reports pages reached twice
	}
	r.seen[id] = true
	p := r.page(id)
	if p == nil {
		return nil
	}
	switch binary.LittleEndian.Uint16(p[8:]) {
	case branchPageFlag:
		return r.branch(id, p, depth)
	case leafPageFlag:
		return r.leaf(id, p, depth)
	}
	return nil // bbolt's check reports a page of the wrong type
}

// branch checks each element's key against its child's first key.
func (r *pageReader) branch(id uint64, p []byte, depth int) []byte {
	var first []byte
	for i := range int(binary.LittleEndian.Uint16(p[10:])) {
		e := pageHeaderLen + i*pageElementLen
		if e+pageElementLen > len(p) {
			r.problem("branch page %d: element %d past the page's end", id, i)
			return first
		}
		key, ok := slice(p, e+int(binary.LittleEndian.Uint32(p[e:])), int(binary.LittleEndian.Uint32(p[e+4:])))
		if !ok {
			r.problem("branch page %d: key %d past the page's end", id, i)
			return first
		}
		if i == 0 {
			first = key
		}
		child := binary.LittleEndian.Uint64(p[e+8:])
		if got := r.tree(child, depth+1); got != nil && !bytes.Equal(got, key) {
			r.problem("branch page %d: key %d is %x, but the first key of its child page %d is %x", id, i, key, child, got)
		}
	}
	return first
}

// leaf checks the nested buckets of a leaf page and returns its first key.
func (r *pageReader) leaf(id uint64, p []byte, depth int) []byte {
	var first []byte
	for i := range int(binary.LittleEndian.Uint16(p[10:])) {
		e := pageHeaderLen + i*pageElementLen
		if e+pageElementLen > len(p) {
			r.problem("leaf page %d: element %d past the page's end", id, i)
			return first
		}
		ksize := int(binary.LittleEndian.Uint32(p[e+8:]))
		kv, ok := slice(p, e+int(binary.LittleEndian.Uint32(p[e+4:])), ksize+int(binary.LittleEndian.Uint32(p[e+12:])))
		if !ok {
			r.problem("leaf page %d: element %d past the page's end", id, i)
			return first
		}
		if i == 0 {
			first = kv[:ksize]
		}
		if binary.LittleEndian.Uint32(p[e:])&bucketLeafFlag != 0 {
			r.bucket(id, kv[ksize:], depth)
		}
	}
	return first
}

// bucket checks the nested bucket whose value v is, in leaf page id.
func (r *pageReader) bucket(id uint64, v []byte, depth int) {
	if len(v) < bucketHeaderLen {
		r.problem("leaf page %d: a bucket value of %d bytes", id, len(v))
		return
	}
	root := binary.LittleEndian.Uint64(v)
	if root != 0 {
		r.tree(root, depth+1)
		return
	}
	inline := v[bucketHeaderLen:]
	if len(inline) < pageHeaderLen {
		r.problem("leaf page %d: an inline bucket of %d bytes", id, len(inline))
		return
	}
	r.leaf(id, inline, depth+1)
}

// slice returns p[off:off+n] if it lies inside p.
func slice(p []byte, off, n int) ([]byte, bool) {
	if off < 0 || n < 0 || off > len(p) || n > len(p)-off {
		return nil, false
	}
	return p[off : off+n], true
}
