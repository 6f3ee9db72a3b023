package runtimetest

import "github.com/torpor-dev/torpor/internal/syncbuf"

// Log is a log a running agent writes while the test reads it.
type Log = syncbuf.Buffer
