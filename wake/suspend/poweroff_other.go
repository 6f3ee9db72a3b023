//go:build !linux

package suspend

import "errors"

func powerOff() error { return errors.New("suspend: power off is only implemented on Linux") }
