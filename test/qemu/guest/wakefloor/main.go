// Command wakefloor is the floor under an empty wake, the "floor" build of
// test/qemu's BenchmarkEmptyWakeVM: in the guest, under
// test/qemu/guest/wakebench, in place of a torpor-agent, it does at each
// hourly window only what the link's protocol and durability ask of any
// device in hourly_wake, with this tree's link client:
//
//   - the link: TCP, the upgrade with its signed token, the signed proof,
//     the hello (transport/link.Dial);
//   - one write transaction committed to a bbolt file (two fdatasync),
//     the least a wake that keeps a record of itself on flash costs;
//   - the state frame, the mode and the next wake only (no card, pulse,
//     status or KeyPackages), and its answer;
//   - the window held open, the relay's pings answered (the interval the
//     agent asks for, wire.MaxPingInterval), then the close handshake.
//
// Nothing else: no pulse chain, no KeyPackage pool, no outbox, no health,
// no signed status. It logs the lines test/internal/wakemeter reads, in the
// agent's form: "waking" with reason=, and "wake" with the phases' wall
// times and the link's bytes.
//
//	wakefloor --key FILE --data-dir DIR --relay URL --time-scale N --time-epoch RFC3339
//
// It takes the agent's --mode, --name, --purposes and --handler too, and
// ignores them, so that test/link's BenchmarkEmptyWake runs it natively
// with the agent's arguments (TORPOR_EMPTYWAKE_AGENT).
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

func main() {
	keyFile := flag.String("key", "", "The device's key file.")
	dataDir := flag.String("data-dir", "", "Where the bbolt file lives.")
	relay := flag.String("relay", "", "The relay's URL.")
	scale := flag.Float64("time-scale", 1, "Run the clock this many times faster than real time.")
	epoch := flag.String("time-epoch", "", "The real instant (RFC 3339) at which the scaled clock equals real time.")
	// The agent's other flags, which a benchmark that runs the floor in
	// the agent's place passes: accepted and left unused.
	for _, name := range []string{"mode", "name", "purposes", "handler"} {
		flag.String(name, "", "Unused: the agent's flag.")
	}
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *keyFile, *dataDir, *relay, *scale, *epoch); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "wakefloor:", err)
		os.Exit(1)
	}
}

// floor is the device: its key, clock, window and bbolt file.
type floor struct {
	key   *did.PrivateKey
	clk   clock.Clock
	relay string
	win   wake.Window
	db    *bolt.DB
	log   *slog.Logger
}

func run(ctx context.Context, keyFile, dataDir, relay string, scale float64, epoch string) error {
	key, err := did.LoadKey(keyFile)
	if err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339Nano, epoch)
	if err != nil {
		return fmt.Errorf("--time-epoch: %w", err)
	}
	clk, err := clock.NewScaledAt(nil, scale, at)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	db, err := bolt.Open(filepath.Join(dataDir, "floor.db"), 0o600, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	f := &floor{key: key, clk: clk, relay: relay, win: wake.SpreadWindowFor(key.DID().String()), db: db,
		log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	// The boot wake links, commits and publishes, and holds the link for
	// a second of the clock; each timer wake holds it to its window's end.
	end := clk.Now().Add(time.Second)
	if err := f.wake(ctx, "boot", end); err != nil {
		return err
	}
	for {
		start, next := f.win.Next(end)
		if start.Before(clk.Now()) { // booted inside a window: the next whole one
			start, next = f.win.Next(next)
		}
		if err := clock.Sleep(ctx, clk, start.Sub(clk.Now())); err != nil {
			return err
		}
		if err := f.wake(ctx, "timer", next); err != nil {
			return err
		}
		end = next
	}
}

// wake links, commits, publishes the state, holds the link until end and
// closes it.
func (f *floor) wake(ctx context.Context, reason string, end time.Time) error {
	f.log.Info("waking", "reason", reason)
	begin := time.Now()
	c, err := link.Dial(ctx, link.Config{RelayURL: f.relay, Key: f.key, Clock: f.clk, PingInterval: wire.MaxPingInterval})
	if err != nil {
		return err
	}
	linked := time.Now()
	if err := f.commit(); err != nil {
		c.Close()
		return err
	}
	committed := time.Now()
	next, _ := f.win.Next(end)
	acc, err := c.Publish(ctx, wire.State{Mode: string(wake.HourlyWake), NextWake: next.Unix(),
		Window: &wire.Window{Minute: f.win.Minute, OffsetSec: int64(f.win.Shift() / time.Second)}})
	if err != nil {
		c.Close()
		return err
	}
	if acc.WakeSecond != nil {
		f.win.Second = *acc.WakeSecond // the next windows open where the relay expects them
	}
	published := time.Now()
	window := f.clk.NewTimer(end.Sub(f.clk.Now()))
	defer window.Stop()
	select {
	case <-ctx.Done():
	case <-c.Done():
		return fmt.Errorf("the relay closed the link during the window: %w", c.Err())
	case <-window.C():
	}
	live := time.Now()
	err = c.Close()
	closed := time.Now()
	t := c.Traffic()
	f.log.Info("wake", "reason", reason, "drain", 0,
		"awake", closed.Sub(begin), "phase.live", live.Sub(published),
		"phase.link", linked.Sub(begin), "phase.pulse", committed.Sub(linked),
		"phase.publish", published.Sub(committed), "phase.close", closed.Sub(live),
		"linkSent", t.Sent, "linkReceived", t.Received)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// commit writes the wake's time in one write transaction.
func (f *floor) commit() error {
	return f.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("wakes"))
		if err != nil {
			return err
		}
		return b.Put([]byte("last"), binary.BigEndian.AppendUint64(nil, uint64(f.clk.Now().UnixNano())))
	})
}
