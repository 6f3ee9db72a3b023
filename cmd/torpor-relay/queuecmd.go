package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/queue/recordlog"
)

const queueUsage = "usage: torpor-relay queue repair|export-bolt [--data-dir DIR]"

// queueCommand runs "torpor-relay queue repair|export-bolt [--data-dir
// DIR]" (queueRepair, queueExportBolt). It returns the exit status.
func queueCommand(argv []string, stdout, stderr io.Writer) int {
	if len(argv) == 0 {
		fmt.Fprintln(stderr, queueUsage)
		return 2
	}
	switch argv[0] {
	case "repair":
		return queueRepair(argv[1:], stdout, stderr)
	case "export-bolt":
		return queueExportBolt(argv[1:], stdout, stderr)
	}
	fmt.Fprintln(stderr, queueUsage)
	return 2
}

// queueExportBolt runs "torpor-relay queue export-bolt [--data-dir DIR]",
// the way back from --queue-engine log to bolt: it writes queue.db from
// the record log queue.log/ (queue.ExportBolt), then renames queue.log/
// aside (kept, never deleted), so that the relay starts with
// --queue-engine bolt on the same records and seqs. It refuses when
// queue.db exists.
func queueExportBolt(argv []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("torpor-relay queue export-bolt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home, _ := os.UserHomeDir()
	dataDir := fs.String("data-dir", filepath.Join(home, ".torpor", "relay"), "The relay's --data-dir, whose queue.log/ is written into queue.db. Stop the relay first.")
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	dir, db := filepath.Join(*dataDir, queue.LogDir), filepath.Join(*dataDir, queue.BoltFile)
	n, err := queue.ExportBolt(dir, db)
	if err != nil {
		fmt.Fprintf(stderr, "torpor-relay queue export-bolt: %v (move an old queue.db aside first; stop the relay first)\n", err)
		return 1
	}
	kept := dir + ".exported-" + time.Now().UTC().Format("20060102T150405Z")
	if err := os.Rename(dir, kept); err != nil {
		os.Remove(db) // the log stays the queue: a queue.db beside it would be imported over it
		fmt.Fprintf(stderr, "torpor-relay queue export-bolt: %v (queue.db removed again; the record log is unchanged)\n", err)
		return 1
	}
	if err := recordlog.SyncDir(*dataDir); err != nil {
		fmt.Fprintln(stderr, "torpor-relay queue export-bolt:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %d records into %s; the record log is kept as %s. Start the relay with --queue-engine bolt.\n", n, db, kept)
	return 0
}

// queueRepair runs "torpor-relay queue repair [--data-dir DIR]": it
// repairs the record log (queue.log/) that the relay refused to start
// with as damaged, keeping a copy of each damaged segment, and says what
// it kept and dropped.
func queueRepair(argv []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("torpor-relay queue repair", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home, _ := os.UserHomeDir()
	dataDir := fs.String("data-dir", filepath.Join(home, ".torpor", "relay"), "The relay's --data-dir, whose queue.log/ is repaired. Stop the relay first.")
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	dir := filepath.Join(*dataDir, "queue.log")
	if _, err := os.Stat(dir); err != nil {
		fmt.Fprintf(stderr, "torpor-relay queue repair: %v (repair works on the record log of --queue-engine log)\n", err)
		return 1
	}
	done, err := queue.RepairLog(dir, time.Now())
	for _, s := range done {
		fmt.Fprintf(stdout, "repaired %s: kept %d frames, dropped %s; the damaged file is kept as %s\n", s.Path, s.Frames, droppedText(s.Dropped), s.Copy)
	}
	if err != nil {
		fmt.Fprintln(stderr, "torpor-relay queue repair:", err)
		return 1
	}
	if len(done) == 0 {
		fmt.Fprintf(stdout, "%s opens as it is: nothing to repair\n", dir)
	}
	return 0
}

func droppedText(d []recordlog.Dropped) string {
	if len(d) == 0 {
		return "nothing"
	}
	s := ""
	for i, r := range d {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d bytes at offset %d", r.Bytes, r.Offset)
	}
	return s
}

// logDamageFix adds to an error opening the record log what to do when a
// segment is damaged.
func logDamageFix(err error) error {
	var de *recordlog.DamageError
	if !errors.As(err, &de) {
		return err
	}
	return fmt.Errorf("%w. The queue refuses to start rather than lose what it holds: stop the relay and run torpor-relay queue repair "+
		"(it keeps a copy of the damaged file and salvages every record it can read), or move queue.log aside (keep it) "+
		"and start over with an empty queue (--reinitialise)", err)
}
