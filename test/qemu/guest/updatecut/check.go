package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/runtime/update/slots"
)

// checked is one CHECK line: what a device's slots say after the cut.
type checked struct {
	Round  int    `json:"round"`
	Device string `json:"device"`
	// Runs is the version stamp of the build the launcher starts next (a
	// slot's build is the update, as its hash says), Signed the version
	// its target was signed with (the slots install it under that), Slot
	// its slot ("" for the packaged build), Trial whether on trial.
	Runs   string `json:"runs"`
	Signed string `json:"signed,omitempty"`
	Slot   string `json:"slot"`
	Trial  bool   `json:"trial"`
	// Starts and MaxStarts are the trial's, when one is open.
	Starts    int `json:"starts,omitempty"`
	MaxStarts int `json:"maxStarts,omitempty"`
	// Result is the last outcome's result, if any.
	Result string `json:"result,omitempty"`
	// Download is what the update directory holds: "", "part N" or
	// "verified".
	Download string `json:"download,omitempty"`
	// Done says the round ended (the device was final).
	Done bool `json:"done,omitempty"`
}

// roundDir is the directory of a round of the device whose directory is
// dir.
func roundDir(dir string, round int) string {
	return filepath.Join(dir, fmt.Sprintf("r%d", round))
}

// check prints the CHECK line of a device of a round. The binary the
// launcher would run is hashed for the current round only (the earlier
// rounds ended, and hashing every slot under TCG at every boot would cost
// seconds).
func check(c config, name string, round, current int) error {
	dir := roundDir(filepath.Join(c.dir, name), round)
	s := slots.New(filepath.Join(dir, "slots"), nil)
	st, err := s.Load()
	if err != nil {
		return err
	}
	want := map[string]string{"good": c.goodSum, "bad": c.badSum}[name]
	ck := checked{Round: round, Device: name, Runs: c.base}
	if o := st.Outcome; o != nil {
		ck.Result = o.Result
	}
	if st.Base != "" && st.Base != c.base {
		return fmt.Errorf("the slots were installed under %q, the packaged build is %s", st.Base, c.base)
	}
	hash := round == current
	if t := st.Trial; t != nil {
		if t.SHA256 != want {
			return fmt.Errorf("slot %s on trial has SHA-256 %s, not the build installed", t.Slot, t.SHA256)
		}
		ck.Starts, ck.MaxStarts = t.Starts, t.MaxStarts
		if t.Starts < t.MaxStarts && (!hash || sum(s.Path(t.Slot)) == t.SHA256) {
			ck.Runs, ck.Signed, ck.Slot, ck.Trial = c.next, t.Version, t.Slot, true
		}
	}
	if !ck.Trial && st.Active != slots.Base {
		if st.ActiveSHA256 != c.goodSum {
			return fmt.Errorf("active slot %s has SHA-256 %s, not the working build's", st.Active, st.ActiveSHA256)
		}
		if got := sum(s.Path(st.Active)); hash && got != st.ActiveSHA256 {
			return fmt.Errorf("active slot %s's binary has SHA-256 %s, the state says %s", st.Active, got, st.ActiveSHA256)
		}
		ck.Runs, ck.Signed, ck.Slot = c.next, st.ActiveVersion, st.Active
	}
	ck.Download = download(dir)
	_, err = os.Stat(filepath.Join(dir, doneMarker))
	ck.Done = err == nil
	b, err := json.Marshal(ck)
	if err != nil {
		return err
	}
	say("CHECK %s", b)
	return nil
}

// sum returns the hex SHA-256 of the file at path, or why it has none.
func sum(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err.Error()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// download says what the device's update directory holds (the agent's
// runtime/update layout): "verified" when verified/ has a file, "part N"
// when part/ has one of N bytes, else "".
func download(dir string) string {
	up := filepath.Join(dir, "update")
	if e, err := os.ReadDir(filepath.Join(up, "verified")); err == nil && len(e) > 0 {
		return "verified"
	}
	e, err := os.ReadDir(filepath.Join(up, "part"))
	if err != nil || len(e) == 0 {
		return ""
	}
	fi, err := e[0].Info()
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("part %d", fi.Size())
}

// checkStores opens every bbolt file under dir (*.db) read-only and checks
// it page by page; it returns how many it checked.
func checkStores(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".db") {
			return err
		}
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
		if err != nil {
			return fmt.Errorf("opening %s: %w", path, err)
		}
		defer db.Close()
		err = db.View(func(tx *bolt.Tx) error {
			var first error
			for err := range tx.Check() { // read to the end: the check runs in the transaction
				if first == nil {
					first = err
				}
			}
			return first
		})
		if err != nil {
			return fmt.Errorf("checking %s: %w", path, err)
		}
		n++
		return nil
	})
	return n, err
}
