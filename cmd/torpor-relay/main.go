// Command torpor-relay is the hosted relay every sleeping Torpor device
// pairs with: the device's public A2A endpoint, its bounded durable queue,
// its KeyPackage pool and its MQTT broker. See transport/relay.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "torpor-relay: the relay server is being built (issue 5); nothing to run yet")
	os.Exit(2)
}
