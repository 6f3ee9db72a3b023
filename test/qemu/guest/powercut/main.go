// Command powercut is the guest program of the QEMU power-cut test of the
// real binaries (test/qemu/powercut_test.go). At every boot, on the file
// system of the virtio disk (-dir), it first reads what the last power
// cut left, before anything else opens the files:
//
//   - "OUTBOX <object id>" for every entry of the agent's outbox in
//     agent.db (runtime/drain, bucket drain-outbox, read-only): hand-offs
//     the agent committed to and had not finished, which its at-most-once
//     recovery will report as possibly lost and drop, never repeat;
//   - "PRESENT <hash>" for every record of the agent still in the relay's
//     queue, the first 8 bytes of the SHA-256 of its body in hex. The queue
//     is opened as torpor-relay opens it with --queue-engine (-engine):
//     queue.db with queue.OpenBolt, or the record log queue.log/ with
//     queue.OpenLog, which is the relay's own recovery at its start (a
//     torn tail is cut). The other engine's file on the disk is an error;
//   - "SEGMENT <n>" with the record log: the number of its newest segment
//     file, which tells how many times the log has rotated;
//
// then prints "READY" and starts the real torpor-relay (its data directory
// relay/ on the disk, --queue-engine -engine, listening on port 8080 for
// the host's senders) and
// the real torpor-agent (-config; its data directory agent/ on the disk),
// linked to the relay over the guest's loopback, with their output on the
// console. It waits until the power is cut, or prints an ERROR line when
// either program exits. Every line of its own is drained to the UART
// (tcdrain) before it goes on.
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/torpor-dev/torpor/store/queue"
)

func main() {
	dir := flag.String("dir", "/data", "The mounted file system of the disk.")
	agent := flag.String("agent", "", "The agent's DID.")
	config := flag.String("config", "/etc/torpor/agent.json", "torpor-agent's configuration.")
	engine := flag.String("engine", "bolt", "The relay's --queue-engine: bolt or log.")
	flag.Parse()
	if err := run(*dir, *agent, *config, *engine, flag.Args()); err != nil {
		say("ERROR %v", err)
		os.Exit(1)
	}
}

// say prints one line on the console and waits until the UART has sent
// it.
func say(format string, a ...any) {
	fmt.Fprintf(os.Stdout, format+"\n", a...)
	unix.IoctlSetInt(int(os.Stdout.Fd()), unix.TCSBRK, 1) // tcdrain
}

// run reads the disk, then starts the relay with the queue engine and
// relayArgs, and the agent.
func run(dir, agent, config, engine string, relayArgs []string) error {
	if err := outbox(filepath.Join(dir, "agent", "agent.db")); err != nil {
		return err
	}
	relayDir := filepath.Join(dir, "relay")
	if err := present(relayDir, engine, agent); err != nil {
		return err
	}
	say("READY")
	relay := exec.Command("/bin/torpor-relay", append([]string{"--data-dir", relayDir, "--queue-engine", engine}, relayArgs...)...)
	ag := exec.Command("/bin/torpor-agent", "--config", config)
	done := make(chan error, 2)
	for _, c := range []*exec.Cmd{relay, ag} {
		c.Stdout, c.Stderr = os.Stdout, os.Stdout
		if err := c.Start(); err != nil {
			return err
		}
		go func() { done <- fmt.Errorf("%s exited: %v", c.Path, c.Wait()) }()
	}
	return <-done
}

// outbox prints the object id of every outbox entry of the agent's store
// (runtime/drain/outbox.go: field 1 of the CBOR entry).
func outbox(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("drain-outbox"))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var e struct {
				ObjectID string `cbor:"1,keyasint"`
			}
			if err := cbor.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("outbox entry %x: %w", k, err)
			}
			say("OUTBOX %s", e.ObjectID)
			return nil
		})
	})
}

// present prints the hash of every record of agent in the queue of the
// relay's data directory dir, opened as torpor-relay opens it with
// --queue-engine engine (cmd/torpor-relay/stores.go, openQueue).
func present(dir, engine, agent string) error {
	db, logDir := filepath.Join(dir, "queue.db"), filepath.Join(dir, "queue.log")
	path, other := db, logDir
	if engine == "log" {
		path, other = logDir, db
	} else if engine != "bolt" {
		return fmt.Errorf("-engine %q: want bolt or log", engine)
	}
	if _, err := os.Stat(other); err == nil {
		return fmt.Errorf("the relay ran with --queue-engine %s, yet %s exists", engine, other)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if engine == "log" {
		if err := newestSegment(logDir); err != nil {
			return err
		}
	}
	var q queue.Store
	var err error
	if engine == "log" {
		q, err = queue.OpenLog(logDir, &queue.LogOptions{ImportBolt: db})
	} else {
		q, err = queue.OpenBolt(db, nil)
	}
	if err != nil {
		return err
	}
	defer q.Close()
	recs, err := q.Next(context.Background(), agent, 0, 1<<20, time.Now())
	if err != nil {
		return err
	}
	for _, r := range recs {
		h := sha256.Sum256(r.Body)
		say("PRESENT %x", h[:8])
	}
	return nil
}

// newestSegment prints "SEGMENT <n>": the number in the name of the record
// log's newest segment file (0000000000000001.log, ...).
func newestSegment(logDir string) error {
	names, err := filepath.Glob(filepath.Join(logDir, "*.log"))
	if err != nil {
		return err
	}
	var newest uint64
	for _, name := range names {
		var n uint64
		if _, err := fmt.Sscanf(filepath.Base(name), "%d.log", &n); err == nil && n > newest {
			newest = n
		}
	}
	say("SEGMENT %d", newest)
	return nil
}
