package conffile

import (
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/boards/boardtest"
)

// TestBoardAuto: "auto" reads the device tree's model and picks the
// profile; an unknown board falls back to the architecture's generic
// profile, except a Raspberry Pi, whose generic fallback would wake by an
// RTC it does not have.
func TestBoardAuto(t *testing.T) {
	defer func(p string) { modelPath = p }(modelPath)
	for _, tt := range []struct {
		model, want, err string
	}{
		{"Raspberry Pi 4 Model B Rev 1.5", "rpi-4", ""},
		{"Raspberry Pi Zero Rev 1.3", "rpi-zero-w", ""},
		{"linux,dummy-virt", "qemu-virt", ""},
		{"Raspberry Pi 9 Model Z Rev 1.0", "", `"Raspberry Pi 9 Model Z Rev 1.0" is a Raspberry Pi with no profile`},
		{"Pine64 RockPro64 v2.1", map[string]string{"arm": "generic-armv7", "arm64": "generic-arm64"}[goruntime.GOARCH], "no generic profile for GOARCH=" + goruntime.GOARCH},
	} {
		modelPath = boardtest.ModelFile(t, tt.model)
		for _, name := range []string{"auto", ""} {
			b, err := (&File{Board: name}).board()
			switch {
			case tt.want != "" && (err != nil || b.Name != tt.want):
				t.Errorf("model %q, board %q: %s, %v; want %s", tt.model, name, b.Name, err, tt.want)
			case tt.want == "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("model %q, board %q: %s, %v; want an error containing %q", tt.model, name, b.Name, err, tt.err)
			}
		}
	}
	// A named board is taken as named, whatever the model says.
	if b, err := (&File{Board: "rpi-5"}).board(); err != nil || b.Name != "rpi-5" {
		t.Errorf(`board "rpi-5": %s, %v`, b.Name, err)
	}
	if _, err := (&File{Board: "rpi-6"}).board(); err == nil {
		t.Error(`board "rpi-6" accepted`)
	}
}
