package recordlog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/torpor-dev/torpor/store"
)

// Segment is one file of a record log. Its user appends to the last one
// only, one commit at a time (Append, then Sync).
type Segment struct {
	ID   uint64
	Path string
	File *os.File
	// Version is the segment's format (Magic, MagicV1); a user appends
	// only to a segment of the current version, 2.
	Version int
	// Size is the end of the frames written (the next frame's offset).
	Size int64
	// Alloc is the file's length: the frames and the zeros written ahead
	// of them, so that a commit's fdatasync seldom changes the file's size.
	Alloc int64
	// Live counts the live records whose current frame is in this segment,
	// Records the record frames written to it, and DeadAt is the commit
	// that took Live to zero: the segment may be deleted once that commit
	// is synced. The user keeps them (see Compactable and DropDead).
	Live, Records int
	DeadAt        uint64
}

// Name is the file name of segment id.
func Name(id uint64) string { return fmt.Sprintf("%016x.log", id) }

// List returns the ids of the segment files in dir, in order. A file that
// ends in ".log" without a segment's name is a *store.CorruptError.
func List(dir string) ([]uint64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("recordlog: reading the log directory: %w", err)
	}
	var ids []uint64
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ".log")
		if !ok {
			continue
		}
		id, err := strconv.ParseUint(name, 16, 64)
		if err != nil || len(name) != 16 || id == 0 {
			return nil, &store.CorruptError{Path: filepath.Join(dir, de.Name()), Problems: []string{"not a segment name"}}
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// Create creates segment id in dir and makes its name durable. The file is
// empty: the first commit writes Magic.
func Create(dir string, id uint64) (*Segment, error) {
	path := filepath.Join(dir, Name(id))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("recordlog: creating a segment: %w", err)
	}
	if err := SyncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return &Segment{ID: id, Path: path, File: f, Version: 2}, nil
}

// Open opens segment id of dir for reading and appending.
func Open(dir string, id uint64) (*Segment, error) {
	path := filepath.Join(dir, Name(id))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("recordlog: opening a segment: %w", err)
	}
	return &Segment{ID: id, Path: path, File: f}, nil
}

// SyncDir makes dir's entries (created, renamed or removed files) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("recordlog: syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("recordlog: syncing %s: %w", dir, err)
	}
	return nil
}

// WriteHeader writes the header of an empty segment (or one whose first
// commit was torn), drops anything after it and syncs.
func (s *Segment) WriteHeader() error {
	if _, err := s.File.WriteAt(Magic, 0); err != nil {
		return fmt.Errorf("recordlog: writing segment %d: %w", s.ID, err)
	}
	if err := s.File.Truncate(int64(len(Magic))); err != nil {
		return fmt.Errorf("recordlog: writing segment %d: %w", s.ID, err)
	}
	s.Size, s.Alloc, s.Version = int64(len(Magic)), int64(len(Magic)), 2
	return s.Sync()
}

// Sync flushes the segment's data (fdatasync where the system has it).
func (s *Segment) Sync() error { return datasync(s.File) }

// Cut truncates the segment at off and syncs.
func (s *Segment) Cut(off int64) error {
	if err := s.File.Truncate(off); err != nil {
		return fmt.Errorf("recordlog: cutting segment %d at %d: %w", s.ID, off, err)
	}
	s.Size, s.Alloc = off, off
	return s.Sync()
}

// zeros is what Append writes ahead of the frames.
var zeros = make([]byte, 64<<10)

// Append writes buf at base and, when it reaches past the zeros written
// ahead, zeroAhead more zeros after it, and returns the file's new length
// (it does not set Alloc: a user that writes the next commit while this
// one syncs sets it where only one writer runs). It does not sync.
func (s *Segment) Append(buf []byte, base, zeroAhead int64) (int64, error) {
	if _, err := s.File.WriteAt(buf, base); err != nil {
		return 0, err
	}
	end, alloc := base+int64(len(buf)), s.Alloc
	if end <= alloc {
		return alloc, nil
	}
	for alloc = end; alloc < end+zeroAhead; {
		n, err := s.File.WriteAt(zeros[:min(int64(len(zeros)), end+zeroAhead-alloc)], alloc)
		if err != nil {
			return 0, err
		}
		alloc += int64(n)
	}
	return alloc, nil
}

// ReadAt reads the n bytes of the frame at off.
func (s *Segment) ReadAt(off int64, n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := s.File.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("recordlog: reading segment %d at %d: %w", s.ID, off, err)
	}
	return b, nil
}
