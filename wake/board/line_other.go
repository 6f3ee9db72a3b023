//go:build !linux

package board

import (
	"fmt"

	"github.com/torpor-dev/torpor/boards"
	"periph.io/x/conn/v3/gpio"
)

// OpenLine needs Linux's GPIO character device.
func OpenLine(b boards.Board) (gpio.PinIn, error) {
	return nil, fmt.Errorf("%w: GPIO lines need Linux", ErrNoLine)
}
