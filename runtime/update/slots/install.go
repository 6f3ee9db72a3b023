package slots

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrTrial is Install's error while a slot is on trial: one install at a
// time.
var ErrTrial = errors.New("slots: a slot is on trial")

// TrialOptions bound a trial; zero fields take the defaults.
type TrialOptions struct {
	Starts   int           // starts the new build gets to confirm (DefaultStarts)
	Deadline time.Duration // how long each start has (DefaultDeadline)
}

// Install copies the verified build at file, of version, into the slot not
// running and puts it on trial. The outcome's From is the active slot's
// version, or base, the packaged build's, when no slot is active: the launcher runs it at the next start.
// The binary is written and synced under a temporary name, renamed into
// its slot and the slot's directory synced before the state file names
// it; until that state file is in place the running build stays the one
// the launcher starts. The caller restarts the agent afterwards.
func (s *Slots) Install(file, version, base string, o TrialOptions) error {
	if o.Starts <= 0 {
		o.Starts = DefaultStarts
	}
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if version == "" {
		return errors.New("slots: install without a version")
	}
	if err := s.fs.MkdirAll(s.Dir, 0o750); err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := s.Load()
	if err != nil {
		return err
	}
	if st.Trial != nil {
		return fmt.Errorf("%w (slot %s, version %s)", ErrTrial, st.Trial.Slot, st.Trial.Version)
	}
	slot := other(st.Active)
	sum, err := s.copyIn(file, slot)
	if err != nil {
		return fmt.Errorf("slots: writing slot %s: %w", slot, err)
	}
	from := st.ActiveVersion
	if st.Active == Base {
		from = base
	}
	if st.Base == "" {
		st.Base = base // no slot ever ran: base is the running build
	}
	st.Trial = &Trial{Slot: slot, Version: version, From: from, SHA256: sum, MaxStarts: o.Starts, Deadline: o.Deadline}
	st.Outcome = nil
	return s.save(st)
}

// copyIn writes file into slot and returns its SHA-256.
func (s *Slots) copyIn(file, slot string) (string, error) {
	in, err := s.fs.Open(file)
	if err != nil {
		return "", err
	}
	defer in.Close()
	dir := filepath.Join(s.Dir, slot)
	if err := s.fs.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	h := sha256.New()
	if err := s.fs.CopyIn(filepath.Join(dir, "."+Binary+".tmp"), filepath.Join(dir, Binary), io.TeeReader(in, h), 0o755); err != nil {
		return "", err
	}
	sum := h.Sum(nil)
	if bytes.Equal(sum, sha256.New().Sum(nil)) {
		return "", fmt.Errorf("%s is empty", file)
	}
	return hex.EncodeToString(sum), nil
}

// sum returns the hex SHA-256 of slot's binary.
func (s *Slots) sum(slot string) (string, error) {
	f, err := s.fs.Open(s.Path(slot))
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// lock takes the slots directory's lock (flock(2) on .lock), which the
// launcher and the running agent both take around a change of the state;
// without a directory there is nothing to lock.
func (s *Slots) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.Dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
