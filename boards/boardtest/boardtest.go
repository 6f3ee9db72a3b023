// Package boardtest helps test code that detects boards: it writes fake
// /proc/device-tree/model files.
package boardtest

import (
	"os"
	"path/filepath"
	"testing"
)

// ModelFile writes model, NUL-terminated as the kernel shows it, to a file
// in a temporary directory and returns its path.
func ModelFile(t testing.TB, model string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "model")
	if err := os.WriteFile(p, append([]byte(model), 0), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Models are device-tree model strings as real boards report them.
var Models = map[string]string{
	"rpi-1":        "Raspberry Pi Model B Plus Rev 1.2",
	"rpi-zero-w":   "Raspberry Pi Zero W Rev 1.1",
	"rpi-2":        "Raspberry Pi 2 Model B Rev 1.1",
	"rpi-zero-2-w": "Raspberry Pi Zero 2 W Rev 1.0",
	"rpi-3":        "Raspberry Pi 3 Model B Plus Rev 1.3",
	"rpi-4":        "Raspberry Pi 4 Model B Rev 1.5",
	"rpi-5":        "Raspberry Pi 5 Model B Rev 1.0",
	"qemu-virt":    "linux,dummy-virt",
}
