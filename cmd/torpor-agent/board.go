package main

import (
	"fmt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/wake"
)

// boardSources returns the wake sources of the board profile name. Board
// profiles (package boards) are not part of this build yet, so a board
// name is refused with a way forward rather than guessed at.
func boardSources(name string, _ clock.Clock) ([]wake.Source, error) {
	return nil, fmt.Errorf("--board %q: board profiles are not available in this build; list the wake sources in the configuration file's \"wake\" member", name)
}
