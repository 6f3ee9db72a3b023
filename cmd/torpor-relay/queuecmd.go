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

// queueCommand runs "torpor-relay queue repair [--data-dir DIR]": it
// repairs the record log (queue.log/) that the relay refused to start
// with as damaged, keeping a copy of each damaged segment, and says what
// it kept and dropped. It returns the exit status.
func queueCommand(argv []string, stdout, stderr io.Writer) int {
	if len(argv) == 0 || argv[0] != "repair" {
		fmt.Fprintln(stderr, "usage: torpor-relay queue repair [--data-dir DIR]")
		return 2
	}
	fs := flag.NewFlagSet("torpor-relay queue repair", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home, _ := os.UserHomeDir()
	dataDir := fs.String("data-dir", filepath.Join(home, ".torpor", "relay"), "The relay's --data-dir, whose queue.log/ is repaired. Stop the relay first.")
	if err := fs.Parse(argv[1:]); err != nil {
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
