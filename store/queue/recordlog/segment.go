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
	// Short is set when Append could not write the zeros ahead (the file
	// system is full): what is left is Alloc - Size. Extend clears it.
	Short bool
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
// one syncs sets it where only one writer runs). It does not sync. Zeros
// that cannot be written (a full file system) are not an error: Short is
// set, and the length returned is what was written.
func (s *Segment) Append(buf []byte, base, zeroAhead int64) (int64, error) {
	if _, err := s.File.WriteAt(buf, base); err != nil {
		return 0, err
	}
	end, alloc := base+int64(len(buf)), s.Alloc
	if end <= alloc {
		return alloc, nil
	}
	alloc, err := s.zeros(end, end+zeroAhead)
	s.Short = err != nil
	return alloc, nil
}

// zeros writes zeros from at to end and returns how far it got.
func (s *Segment) zeros(at, end int64) (int64, error) {
	for at < end {
		n, err := s.File.WriteAt(zeros[:min(int64(len(zeros)), end-at)], at)
		at += int64(n)
		if err != nil {
			return at, err
		}
	}
	return at, nil
}

// Extend tries again to write n zeros ahead of a Short segment's frames,
// and clears Short when they could be written (space came back).
func (s *Segment) Extend(n int64) {
	if !s.Short {
		return
	}
	alloc, err := s.zeros(s.Alloc, s.Alloc+n)
	if err == nil {
		s.Alloc, s.Short = alloc, false
		return
	}
	// Keep the length where the frames can use it: what was written is
	// zeros, and a later sync makes it durable with them.
	s.Alloc = alloc
}

// Rollback takes back what the commits since base wrote, whose sync
// failed or that came after one that failed, so that they are never read
// again (their callers were told they were not stored): it overwrites
// them with zeros up to alloc, the length before them (blocks already
// there, so a full file system takes the write), drops anything after
// alloc, and syncs. When the zeros cannot be written it truncates at base
// instead.
func (s *Segment) Rollback(base, end, alloc int64) error {
	if _, err := s.zeros(base, min(end, alloc)); err != nil {
		alloc = base
	}
	if fi, err := s.File.Stat(); err != nil || fi.Size() != alloc {
		if err := s.File.Truncate(alloc); err != nil {
			return fmt.Errorf("recordlog: rolling back segment %d to %d: %w", s.ID, base, err)
		}
	}
	if err := s.Sync(); err != nil {
		return fmt.Errorf("recordlog: rolling back segment %d to %d: %w", s.ID, base, err)
	}
	s.Size, s.Alloc = base, alloc
	return nil
}

// Remove closes and deletes the segment file (a segment whose first
// commit failed).
func (s *Segment) Remove() error {
	s.File.Close()
	if err := os.Remove(s.Path); err != nil {
		return fmt.Errorf("recordlog: removing segment %d: %w", s.ID, err)
	}
	return SyncDir(filepath.Dir(s.Path))
}

// ReadAt reads the n bytes of the frame at off.
func (s *Segment) ReadAt(off int64, n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := s.File.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("recordlog: reading segment %d at %d: %w", s.ID, off, err)
	}
	return b, nil
}
