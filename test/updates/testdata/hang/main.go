// Command hang is a broken build of the agent for test/updates: it starts
// and never gets anywhere, as a build stuck on a lock or a dead device
// would.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	fmt.Fprintln(os.Stderr, "hang build: started")
	time.Sleep(1 << 62) // select{} would end in the runtime's deadlock error
}
