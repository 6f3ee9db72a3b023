// Command crash is a broken build of the agent for test/updates: it exits
// at start, as a build that cannot read its configuration or panics in an
// init function would.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "crash build: cannot start")
	os.Exit(2)
}
