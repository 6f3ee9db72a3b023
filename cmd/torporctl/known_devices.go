package main

import (
	"os"
	"path/filepath"
)

// defaultKnownDevices is where torporctl keeps its pins of device names to
// DIDs (command.KnownDevices): $TORPOR_KNOWN_DEVICES, else
// ~/.config/torpor/known_devices (os.UserConfigDir).
func defaultKnownDevices() string {
	if v := os.Getenv("TORPOR_KNOWN_DEVICES"); v != "" {
		return v
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "known_devices"
	}
	return filepath.Join(dir, "torpor", "known_devices")
}
