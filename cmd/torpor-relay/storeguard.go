package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/store"
)

// errStoreRefused is wrapped by run's error when the relay refuses to
// start on its files: one is damaged, or it is missing or empty although
// the store marker says the relay ran on it before (and --reinitialise is
// not set). The message names the file and the fix; main exits with
// exitStore, which the systemd unit does not restart.
var errStoreRefused = errors.New("refusing to start on the relay's stores")

// exitStore is the exit status of a store refusal: EX_DATAERR of
// sysexits.h, listed in packaging/systemd/torpor-relay.service's
// RestartPreventExitStatus: restarting cannot fix it, an operator must.
const exitStore = 65

// markerName is the store marker's name in the data directory: a small
// JSON file written once the relay's stores were first opened. It is the
// same for both queue engines.
const markerName = "stores.marker"

// storeMarker is the marker's content: which of the relay's stores
// existed, so that one found missing or empty later is refused.
type storeMarker struct {
	Created time.Time `json:"created"`
	// Stores are the names of storeFiles the relay has run on.
	Stores []string `json:"stores"`
}

// The stores the marker knows: the queue (either engine), the agents'
// states and the embedded broker's sessions.
const (
	storeQueue  = "queue"
	storeAgents = "agents.db"
	storeMQTT   = "mqtt.db"
)

// reinitialiseHelp is the --reinitialise flag's text.
const reinitialiseHelp = "Start with empty stores where the store marker in --data-dir (" + markerName + ") says the relay ran before and queue.db or queue.log/, agents.db or mqtt.db is missing or empty (the relay refuses otherwise): their queued messages, device states and MQTT sessions are gone. A damaged file must be moved aside first."

// storeGuard checks the relay's files in dataDir before they are opened.
type storeGuard struct {
	dataDir string
	reinit  bool
	log     *slog.Logger
	// fresh are the stores the guard let start empty.
	fresh bool
}

// stores returns the names of the relay's stores for this run (mqtt.db
// only with the embedded broker).
func (a *args) stores() []string {
	s := []string{storeQueue, storeAgents}
	if a.mqtt.external == "" {
		s = append(s, storeMQTT)
	}
	return s
}

// present reports whether store name is there: a non-empty bbolt file,
// or for the queue (either engine: the log imports queue.db), a
// non-empty queue.db or a record log segment that is not empty (opening
// the log writes the last segment's header, so after a start one is not;
// an empty segment among others is the record log's own damage rule,
// store/queue's package doc).
func (g *storeGuard) present(name string) (bool, string) {
	if name != storeQueue {
		p := filepath.Join(g.dataDir, name)
		return nonEmpty(p), p
	}
	db, dir := filepath.Join(g.dataDir, "queue.db"), filepath.Join(g.dataDir, "queue.log")
	if nonEmpty(db) {
		return true, db
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	return slices.ContainsFunc(segs, nonEmpty), db + " (or " + dir + ")"
}

func nonEmpty(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Size() > 0
}

// check refuses a store the marker lists that is missing or empty, unless
// --reinitialise.
func (g *storeGuard) check() error {
	mp := filepath.Join(g.dataDir, markerName)
	b, err := os.ReadFile(mp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // the first start, or one before the marker existed
	case err != nil:
		return fmt.Errorf("%w: the store marker %s cannot be read: %v", errStoreRefused, mp, err)
	}
	var m storeMarker
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%w: the store marker %s is not JSON (%v): restore it, or delete it if the stores beside it are sound", errStoreRefused, mp, err)
	}
	var lost []string
	for _, name := range m.Stores {
		if ok, path := g.present(name); !ok {
			lost = append(lost, path)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	if g.reinit {
		g.log.Warn("starting with empty stores as asked (--reinitialise): their queued messages, device states and MQTT sessions are gone",
			"lost", lost, "marker", mp)
		g.fresh = true
		return nil
	}
	return fmt.Errorf("%w: %s missing or empty, but this relay has run on it before (the store marker %s says its stores were created %s). "+
		"Starting empty would lose every message senders were told is queued. Stop the relay, restore the file from a backup "+
		"(or put back the disk or directory it was on), or start over deliberately with empty stores: run torpor-relay once with --reinitialise",
		errStoreRefused, strings.Join(lost, ", ")+isAre(len(lost)), mp, m.Created.UTC().Format(time.RFC3339))
}

func isAre(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

// writeMarker records the stores of this run that are there, when the
// marker is missing, lists fewer, or the stores were made afresh. A marker that
// cannot be written is logged: the relay runs without the protection. A
// nil guard (JetStream: no files) does nothing.
func (g *storeGuard) writeMarker(stores []string, now time.Time) {
	if g == nil {
		return
	}
	mp := filepath.Join(g.dataDir, markerName)
	var m storeMarker
	if b, err := os.ReadFile(mp); err == nil && json.Unmarshal(b, &m) == nil && !g.fresh {
		if !slices.ContainsFunc(stores, func(s string) bool { return !slices.Contains(m.Stores, s) }) {
			return
		}
	} else {
		m.Created = now.UTC()
	}
	for _, s := range stores {
		if ok, _ := g.present(s); ok && !slices.Contains(m.Stores, s) {
			m.Stores = append(m.Stores, s)
		}
	}
	b, _ := json.Marshal(m)
	if err := atomicfile.WriteFile(mp, append(b, '\n'), 0o600); err != nil {
		g.log.Warn("cannot write the store marker; a lost store would start empty without notice", "marker", mp, "err", err)
	}
}

// checkBolt checks the bbolt file at path, if it holds data, as the agent
// checks agent.db (store.Options.Check: both meta pages, then bbolt's
// consistency check, panics recovered), and closes it again. A meta page
// that fails its checksum while the other is sound is logged: bbolt
// would open the file one transaction back without a word.
func (g *storeGuard) checkBolt(path string) error {
	if !nonEmpty(path) {
		return nil
	}
	if problem := store.MetaFallback(path); problem != "" {
		g.log.Error(problem+". If the relay acknowledged a send or a drain in that commit, it is undone; "+
			"compare with a backup (docs/operations.md, \"Store faults\")", "store", path)
	}
	db, err := store.Open(path, &store.Options{Check: true})
	if err != nil {
		return storeFix(path, err)
	}
	return db.Close()
}

// storeFix wraps an error opening the store at path with what the
// operator does about it; a damaged file wraps errStoreRefused.
func storeFix(path string, err error) error {
	var ce *store.CorruptError
	switch {
	case errors.As(err, &ce):
		return fmt.Errorf("%w: %w. Stop the relay, move %s aside (keep it for diagnosis), then restore it from a backup, "+
			"or start over with an empty store: run torpor-relay once with --reinitialise (what it held is lost)", errStoreRefused, err, path)
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w. Another process holds %s's lock: stop the other torpor-relay on this --data-dir", err, path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w. The relay's user cannot read and write %s: give it the file (chown), or choose another --data-dir", err, path)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w. The file system of %s is full: free space, then start the relay again", err, path)
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%w. The file system of %s is read-only: remount it read-write, then start the relay again", err, path)
	}
	return fmt.Errorf("%w: %w. If %s is damaged, stop the relay, move it aside (keep it for diagnosis) and restore it from a backup, "+
		"or start over with an empty store: run torpor-relay once with --reinitialise", errStoreRefused, err, path)
}

// checkAll refuses lost stores (check), then checks every bbolt file of
// the run: queue.db (also with --queue-engine log, which imports it),
// agents.db and, with the embedded broker, mqtt.db.
func (g *storeGuard) checkAll(a *args) error {
	if err := g.check(); err != nil {
		return err
	}
	files := []string{"queue.db", storeAgents}
	if a.mqtt.external == "" {
		files = append(files, storeMQTT)
	}
	for _, f := range files {
		if err := g.checkBolt(filepath.Join(g.dataDir, f)); err != nil {
			return err
		}
	}
	return nil
}
