package board_test

import (
	"context"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/wake/board"
)

// The agent's path from a board to a sleep: detect the profile, build its
// wake source (RTC alarm plus the gpio-keys button here), sleep until the
// next window. Compile-only: it suspends the machine it runs on.
func Example() {
	b, _, err := boards.Detect("")
	if err != nil {
		fmt.Println(err)
		return
	}
	src, err := board.New(b, board.Config{Methods: []boards.Method{boards.RTC, boards.GPIOKeys}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Halt()
	w, err := src.Wait(context.Background(), time.Now().Add(time.Hour))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("woke: %s after %v suspended (%s)\n", w.Reason, w.Slept.Boot, w.Detail)
}
