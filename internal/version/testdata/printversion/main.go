// Command printversion prints version.Get, for TestStampedBuild.
package main

import (
	"fmt"

	"github.com/torpor-dev/torpor/internal/version"
)

func main() { fmt.Println(version.Get()) }
