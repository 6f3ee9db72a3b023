package faults

import (
	"strconv"
	"strings"
)

// handlerSaid parses the "pid objectId" line a hanging handler writes to
// the FIFO. ok is false unless pid names one process other than init: a
// handler killed before it wrote leaves an empty line, and a pid of 0 or
// -1 given to kill(2) would signal the test's own process group (make,
// go test and CI's shell with it) or every process there is.
func handlerSaid(line string) (pid int, objectID string, ok bool) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return 0, "", false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 1 {
		return 0, "", false
	}
	return pid, f[1], true
}
