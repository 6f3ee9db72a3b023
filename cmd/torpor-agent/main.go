// Command torpor-agent is the device daemon: it sleeps between wake windows,
// drains its relay queue on waking and validates every object before
// anything acts on it. See runtime.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "torpor-agent: the agent runtime is being built (issue 6); nothing to run yet")
	os.Exit(2)
}
