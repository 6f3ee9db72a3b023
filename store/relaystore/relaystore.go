// Package relaystore is torpor-relay's embedded stores in its data
// directory: which files they are, the store marker that refuses to start
// on one that was lost, and the start-up checks of the bbolt files. (With JetStream, store/jsstore, the relay
// keeps no store files.)
//
// The marker (MarkerName) is a small JSON file written once the relay's
// stores were first opened; it lists them. A store it lists that is
// later missing or empty is refused (ErrRefused) unless the operator asks
// to start over (Guard.Reinitialise): starting empty would lose every
// message senders were told is queued. A damaged bbolt file is refused
// with what to do about it (Fix).
package relaystore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
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

// ErrRefused is wrapped by the error of a refusal to start on the
// relay's files: one is damaged, or it is missing or empty although the
// store marker says the relay ran on it before (and the guard may not
// reinitialise). The message names the file and the fix; torpor-relay
// exits with a status its systemd unit does not restart.
var ErrRefused = errors.New("refusing to start on the relay's stores")

// MarkerName is the store marker's name in the data directory. It is the
// same for both queue engines.
const MarkerName = "stores.marker"

// marker is the marker's content: which of the relay's stores existed, so
// that one found missing or empty later is refused.
type marker struct {
	Created time.Time `json:"created"`
	// Stores are the names (Queue, Agents, MQTT) the relay has run on.
	Stores []string `json:"stores"`
}

// The stores the marker knows: the queue (either engine), the agents'
// states and the embedded broker's sessions.
const (
	Queue  = "queue"
	Agents = "agents.db"
	MQTT   = "mqtt.db"
	// Audit is the audit log of operator actions (store/audit). It is
	// checked at start like the others, but not in the marker: losing it
	// loses no message a sender was told is queued.
	Audit = "audit.db"
	// Rollouts is the update rollouts (store/rollouts), checked at start
	// and kept out of the marker as Audit is: losing it loses no message.
	Rollouts = "rollouts.db"
)

// Names returns the names of the relay's stores for a run: mqtt.db only
// with the embedded broker.
func Names(embeddedBroker bool) []string {
	s := []string{Queue, Agents}
	if embeddedBroker {
		s = append(s, MQTT)
	}
	return s
}

// Guard checks the relay's files in DataDir before they are opened, and
// keeps the store marker.
type Guard struct {
	DataDir string
	// Reinitialise lets the relay start with empty stores where the marker
	// says it ran before (torpor-relay --reinitialise).
	Reinitialise bool
	// Logger receives the guard's warnings; nil discards.
	Logger *slog.Logger
	// fresh are the stores the guard let start empty.
	fresh bool
}

func (g *Guard) logger() *slog.Logger {
	if g.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return g.Logger
}

// present reports whether store name is there: a non-empty bbolt file,
// or for the queue (either engine: the log imports queue.db), a
// non-empty queue.db or a record log segment that is not empty (opening
// the log writes the last segment's header, so after a start one is not;
// an empty segment among others is the record log's own damage rule,
// store/queue's package doc).
func (g *Guard) present(name string) (bool, string) {
	if name != Queue {
		p := filepath.Join(g.DataDir, name)
		return nonEmpty(p), p
	}
	db, dir := filepath.Join(g.DataDir, "queue.db"), filepath.Join(g.DataDir, "queue.log")
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

// checkLost refuses a store the marker lists that is missing or empty, unless
// Reinitialise.
func (g *Guard) checkLost() error {
	mp := filepath.Join(g.DataDir, MarkerName)
	b, err := os.ReadFile(mp)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // the first start, or one before the marker existed
	case err != nil:
		return fmt.Errorf("%w: the store marker %s cannot be read: %v", ErrRefused, mp, err)
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%w: the store marker %s is not JSON (%v): restore it, or delete it if the stores beside it are sound", ErrRefused, mp, err)
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
	if g.Reinitialise {
		g.logger().Warn("starting with empty stores as asked (--reinitialise): their queued messages, device states and MQTT sessions are gone",
			"lost", lost, "marker", mp)
		g.fresh = true
		return nil
	}
	return fmt.Errorf("%w: %s missing or empty, but this relay has run on it before (the store marker %s says its stores were created %s). "+
		"Starting empty would lose every message senders were told is queued. Stop the relay, restore the file from a backup "+
		"(or put back the disk or directory it was on), or start over deliberately with empty stores: run torpor-relay once with --reinitialise",
		ErrRefused, strings.Join(lost, ", ")+isAre(len(lost)), mp, m.Created.UTC().Format(time.RFC3339))
}

func isAre(n int) string {
	if n == 1 {
		return " is"
	}
	return " are"
}

// WriteMarker records the stores of this run that are there, when the
// marker is missing, lists fewer, or the stores were made afresh. A marker that
// cannot be written is logged: the relay runs without the protection. A
// nil guard (JetStream: no files) does nothing.
func (g *Guard) WriteMarker(stores []string, now time.Time) {
	if g == nil {
		return
	}
	mp := filepath.Join(g.DataDir, MarkerName)
	var m marker
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
		g.logger().Warn("cannot write the store marker; a lost store would start empty without notice", "marker", mp, "err", err)
	}
}

// checkBolt checks the bbolt file at path, if it holds data, as the agent
// checks agent.db (store.Options.Check: both meta pages, then bbolt's
// consistency check, panics recovered), and closes it again. A meta page
// that fails its checksum while the other is sound is logged: bbolt
// would open the file one transaction back without a word.
func (g *Guard) checkBolt(path string) error {
	if !nonEmpty(path) {
		return nil
	}
	if problem := store.MetaFallback(path); problem != "" {
		g.logger().Error(problem+". If the relay acknowledged a send or a drain in that commit, it is undone; "+
			"compare with a backup (docs/operations.md, \"Store faults\")", "store", path)
	}
	db, err := store.Open(path, &store.Options{Check: true})
	if err != nil {
		return Fix(path, err)
	}
	return db.Close()
}

// storeFix wraps an error opening the store at path with what the
// operator does about it; a damaged file wraps ErrRefused.
func Fix(path string, err error) error {
	var ce *store.CorruptError
	switch {
	case errors.As(err, &ce):
		return fmt.Errorf("%w: %w. Stop the relay, move %s aside (keep it for diagnosis), then restore it from a backup, "+
			"or start over with an empty store: run torpor-relay once with --reinitialise (what it held is lost)", ErrRefused, err, path)
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
		"or start over with an empty store: run torpor-relay once with --reinitialise", ErrRefused, err, path)
}

// Check refuses lost stores (missing or empty although the marker lists
// them, unless Reinitialise), then checks every bbolt file of the run:
// queue.db (also with the log engine, which imports it), agents.db,
// audit.db, rollouts.db and, with the embedded broker, mqtt.db. It is called before the stores are
// opened.
func (g *Guard) Check(embeddedBroker bool) error {
	if err := g.checkLost(); err != nil {
		return err
	}
	files := []string{"queue.db", Agents, Audit, Rollouts}
	if embeddedBroker {
		files = append(files, MQTT)
	}
	for _, f := range files {
		if err := g.checkBolt(filepath.Join(g.DataDir, f)); err != nil {
			return err
		}
	}
	return nil
}

// BrokerFix wraps an error starting the embedded broker on mqtt.db
// (path): one that is not about its listener is about what it read from
// mqtt.db, which bbolt's check found sound but whose values the broker
// cannot decode. The fix it names is --reinitialise where the store
// guard runs (guarded: --store bolt); elsewhere (--store jetstream, which
// refuses --reinitialise and keeps only the broker's files in --data-dir)
// it is moving the file aside, after which the broker starts empty.
func BrokerFix(path string, guarded bool, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return err
	}
	empty := "run torpor-relay once with --reinitialise"
	if !guarded {
		empty = "start the relay again without it"
	}
	return fmt.Errorf("%w: the embedded MQTT broker cannot load %s: %w. Stop the relay, move %s aside (keep it for diagnosis), "+
		"then restore it from a backup, or start over with an empty one: %s "+
		"(devices' MQTT sessions and retained statuses are lost; devices publish them again)", ErrRefused, path, err, path, empty)
}
