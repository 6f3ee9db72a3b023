package board

import (
	"fmt"
	"sync"

	"github.com/torpor-dev/torpor/boards"
	"periph.io/x/conn/v3/driver/driverreg"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/host/v3/gpioioctl"
)

var (
	initOnce sync.Once
	initErr  error
)

// OpenLine finds the board's wake line through periph's gpioioctl driver
// (the GPIO character device): by its name in gpioreg (lines the device
// tree names, such as GPIO17 on a Pi or WAKE_BTN in the test VM), else by
// offset on the chip the profile names.
func OpenLine(b boards.Board) (gpio.PinIn, error) {
	initOnce.Do(func() { _, initErr = driverreg.Init() })
	if initErr != nil {
		return nil, fmt.Errorf("board: initialising periph: %w", initErr)
	}
	if b.WakeLine != "" {
		if p := gpioreg.ByName(b.WakeLine); p != nil {
			return p, nil
		}
	}
	for _, c := range gpioioctl.Chips {
		if c.Name() == b.GPIOChip {
			if l := c.ByNumber(b.WakeLineNumber); l != nil {
				return l, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: %q or %s line %d", ErrNoLine, b.WakeLine, b.GPIOChip, b.WakeLineNumber)
}
